import Foundation

/// A Redis server of one test's own on a free loopback port, without persistence, for faults that would disturb the
/// shared one (killing it, filling it). Stopped (SIGKILL) by `stop()`.
public struct PrivateRedis: Sendable {
    public let port: Int
    let pid: Int32

    init(port: Int, pid: Int32) {
        self.port = port
        self.pid = pid
    }

    public var url: String { "redis://127.0.0.1:\(port)/0" }

    /// Starts `redis-server` on `port` (a free one when nil) with `extraArguments` (`--maxmemory 4mb`, …), and
    /// returns once it answers. A port taken between the pick and the bind (another test's server) would leave this
    /// one dead and a client talking to the other: the process is checked, and a port of our pick is picked again.
    public static func start(port: Int? = nil, _ extraArguments: [String] = []) throws -> PrivateRedis {
        for _ in 0..<5 {
            let chosen = port ?? freeLoopbackPort()
            let server = Process()
            server.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
            server.arguments = ["--bind", "127.0.0.1", "--port", String(chosen), "--save", "", "--appendonly", "no"] + extraArguments
            // No inherited stdio: a grandchild holding the test runner's pipe would keep `swift test` waiting.
            server.standardInput = FileHandle.nullDevice
            server.standardOutput = FileHandle.nullDevice
            server.standardError = FileHandle.nullDevice
            try server.run()
            let redis = PrivateRedis(port: chosen, pid: server.processIdentifier)
            if redis.waitUntilListening() {
                usleep(50_000)
                if server.isRunning { return redis }
            }
            redis.stop()
            if port != nil { break }
        }
        throw ServerError("redis-server did not start on \(port.map(String.init) ?? "a free port")")
    }

    public func stop() { kill(pid, SIGKILL) }

    /// Freezes the server (SIGSTOP) or lets it go on (SIGCONT): a replica that falls behind.
    public func pause() { kill(pid, SIGSTOP) }
    public func resume() { kill(pid, SIGCONT) }

    /// A master and its replica (`--replicaof`), returned once the replica is online.
    public static func startWithReplica() throws -> (master: PrivateRedis, replica: PrivateRedis) {
        // A full sync writes an RDB file (the replica loads it from its folder): a folder of each one's own, not the
        // directory the tests run in.
        func folder() throws -> [String] {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("carbscan-redis-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            return ["--dir", url.path]
        }
        let master = try start(try folder())
        let replica = try start(try folder() + ["--replicaof", "127.0.0.1", String(master.port)])
        let deadline = Date() + 20
        while Date() < deadline {
            if PrivateCluster.cli(master.port, "INFO", "replication").contains("state=online") { return (master, replica) }
            usleep(50_000)
        }
        master.stop()
        replica.stop()
        throw ServerError("the replica of port \(master.port) never came online")
    }

    /// Returns once the server accepts connections (true), or false after 5 s: a client that tried too early would
    /// sit out its reconnect backoff.
    @discardableResult
    func waitUntilListening() -> Bool {
        let deadline = Date() + 5
        while Date() < deadline {
            if Self.onLoopback(port: port, { fd, address, length in connect(fd, address, length) }) == 0 { return true }
            usleep(10_000)
        }
        return false
    }

    /// A port nothing listens on now, below the ephemeral range (a port-0 pick can be taken by another socket
    /// before the server binds it).
    public static func freeLoopbackPort() -> Int {
        while true {
            let port = Int.random(in: 20_000..<32_000)
            if onLoopback(port: port, { fd, address, length in bind(fd, address, length) }) == 0 { return port }
        }
    }

    /// Calls `body` (bind or connect) with a new TCP socket and 127.0.0.1:`port`, then closes the socket.
    private static func onLoopback(
        port: Int, _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}
