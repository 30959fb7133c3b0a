import Foundation
import Redis

/// A Redis Cluster of one test's own on free loopback ports (masters, each with `replicas` replicas), for faults that
/// would disturb the shared one (`ops/cluster.sh`): killing a master. Stopped (SIGKILL) by `stop()`.
public struct PrivateCluster: Sendable {
    public let nodes: [PrivateRedis]
    let directory: URL

    /// The first node's address: enough for a client, which learns the others.
    public var url: String { "redis://127.0.0.1:\(nodes[0].port)" }

    /// Starts the nodes (node timeout `nodeTimeoutMs`: how long a silent master has before its replica takes over),
    /// joins them with `redis-cli --cluster create`, and returns once every node says `cluster_state:ok`.
    public static func start(masters: Int = 3, replicas: Int = 1, nodeTimeoutMs: Int = 1000) throws -> PrivateCluster {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("carbscan-cluster-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var nodes: [PrivateRedis] = []
        do {
            for index in 0..<(masters * (1 + replicas)) {
                nodes.append(
                    try PrivateRedis.start([
                        "--cluster-enabled", "yes", "--cluster-config-file", directory.appendingPathComponent("nodes-\(index).conf").path,
                        "--cluster-port", String(PrivateRedis.freeLoopbackPort()), "--cluster-node-timeout", String(nodeTimeoutMs),
                        "--dir", directory.path,
                    ]))
            }
            let create = Process()
            create.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
            create.arguments =
                ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" } + ["--cluster-replicas", String(replicas), "--cluster-yes"]
            create.standardInput = FileHandle.nullDevice
            create.standardOutput = FileHandle.nullDevice
            create.standardError = FileHandle.nullDevice
            try create.run()
            create.waitUntilExit()
            guard create.terminationStatus == 0 else { throw ServerError("redis-cli --cluster create exited \(create.terminationStatus)") }
            let cluster = PrivateCluster(nodes: nodes, directory: directory)
            guard cluster.waitUntilOK(timeout: 30) else { throw ServerError("the private cluster never reported cluster_state:ok") }
            // cluster_state:ok comes before the replicas' first sync; a durable write (`WAIT`) then timed out on a loaded
            // CI machine. Tests start with every replica copying its master.
            guard cluster.waitUntilReplicating(timeout: 30) else { throw ServerError("a replica of the private cluster never synced") }
            return cluster
        } catch {
            for node in nodes { node.stop() }
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// A client of the cluster that gives up on a dead node quickly (connect 300 ms, read 1 s), as a failover needs.
    public func client() throws -> RedisClient {
        var configuration = try RedisConfiguration(url: url)
        configuration.connectTimeout = .milliseconds(300)
        configuration.readTimeout = .seconds(1)
        return RedisClient(configuration: configuration)
    }

    /// Kills every node and removes their files.
    public func stop() {
        for node in nodes { node.stop() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// True once every node still running says `cluster_state:ok` and all of them see as many masters.
    @discardableResult
    public func waitUntilOK(timeout: TimeInterval, excluding dead: Set<Int> = []) -> Bool {
        let deadline = Date() + timeout
        while Date() < deadline {
            let states = nodes.filter { !dead.contains($0.port) }.map { Self.cli($0.port, "CLUSTER", "INFO") }
            if states.allSatisfy({ $0.contains("cluster_state:ok") }) { return true }
            usleep(100_000)
        }
        return false
    }

    /// True once every replica says `master_link_status:up` (its first sync done).
    public func waitUntilReplicating(timeout: TimeInterval) -> Bool {
        let deadline = Date() + timeout
        while Date() < deadline {
            let replication = nodes.map { Self.cli($0.port, "INFO", "replication") }
            if replication.allSatisfy({ !$0.contains("role:slave") || $0.contains("master_link_status:up") }) { return true }
            usleep(100_000)
        }
        return false
    }

    /// The port of the master serving `slot`, as the node at `askPort` sees it (`CLUSTER NODES`).
    public func master(ofSlot slot: Int, askPort: Int) -> Int? {
        for line in Self.cli(askPort, "CLUSTER", "NODES").split(separator: "\n") {
            // <id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot or range>…
            let fields = line.split(separator: " ")
            guard fields.count >= 9, fields[2].contains("master"), !fields[2].contains("fail") else { continue }
            for range in fields[8...] {
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                guard let low = bounds.first, low <= slot, slot <= (bounds.last ?? low) else { continue }
                return Int(fields[1].split(separator: "@")[0].split(separator: ":").last ?? "")
            }
        }
        return nil
    }

    /// The node replicating the master at `port`, as the node at `askPort` sees it.
    public func replica(ofMasterAt port: Int, askPort: Int) -> PrivateRedis? {
        let lines = Self.cli(askPort, "CLUSTER", "NODES").split(separator: "\n").map { $0.split(separator: " ") }
        guard let master = lines.first(where: { $0.count > 1 && $0[1].hasPrefix("127.0.0.1:\(port)@") })?[0] else { return nil }
        guard let replica = lines.first(where: { $0.count > 3 && $0[3] == master }),
            let replicaPort = Int(replica[1].split(separator: "@")[0].split(separator: ":").last ?? "")
        else { return nil }
        return nodes.first { $0.port == replicaPort }
    }

    /// `redis-cli -p port arguments…`: its output.
    public static func cli(_ port: Int, _ arguments: String...) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-p", String(port)] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
