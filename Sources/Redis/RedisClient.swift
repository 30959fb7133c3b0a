import Logging
import Synchronization

/// A pool of Redis connections, each owned by its own thread. Safe to share across tasks.
///
/// Concurrent calls are pipelined automatically per connection. Blocking commands (`XREADGROUP … BLOCK`,
/// `BLPOP`) must use a ``BlockingConnection`` so they never hold up the pool.
public final class RedisClient: Sendable {
    public let configuration: RedisConfiguration
    private let threads: [ConnectionThread]
    private let next = Atomic<Int>(0)
    private let scriptSHAs = Mutex<[Int: String]>([:])
    private let logger: Logger

    public init(configuration: RedisConfiguration, logger: Logger = Logger(label: "redis")) {
        self.configuration = configuration
        self.logger = logger
        self.threads = (0..<max(1, configuration.poolSize)).map {
            ConnectionThread(name: "redis-\($0)", configuration: configuration, logger: logger)
        }
    }

    public convenience init(url: String, logger: Logger = Logger(label: "redis")) throws(RedisError) {
        self.init(configuration: try RedisConfiguration(url: url), logger: logger)
    }

    deinit {
        for thread in threads { thread.close() }
    }

    /// Stops the connection threads once their queued requests are answered.
    public func close() {
        for thread in threads { thread.close() }
    }

    /// A task executor on one of the pool's connection threads. A task that prefers it
    /// (`withTaskExecutorPreference(redis.executor) { … }`) sends its commands on that connection and is resumed
    /// there, without a thread switch each way: for a caller that awaits one command after another (a producer
    /// enqueueing one job at a time). Its code holds up the connection while it runs, so keep it short and
    /// non-blocking.
    public var executor: any TaskExecutor { threads[0] }

    /// True when the caller runs on one of this pool's connection threads (a task preferring ``executor``).
    var isOnConnectionThread: Bool { threads.contains { $0.isCurrent } }

    /// The connection of the thread we are on (a task preferring ``executor``), else the next in turn.
    private func pick() -> ConnectionThread {
        for thread in threads where thread.isCurrent { return thread }
        return threads[next.wrappingAdd(1, ordering: .relaxed).oldValue % threads.count]
    }

    /// Sends one command. An error reply throws `RedisError` with code `.server`.
    @discardableResult
    public func send(_ arguments: [String]) async throws -> RedisValue {
        let reply = try await pick().submit([arguments])[0]
        if case .error(let message) = reply { throw RedisError(.server, message) }
        return reply
    }

    @discardableResult
    public func send(_ arguments: String...) async throws -> RedisValue {
        try await send(arguments)
    }

    /// Sends the commands in one round-trip. Error replies are returned in place as `.error`, not thrown,
    /// so one failed command does not hide the others' results.
    public func pipeline(_ commands: [[String]]) async throws -> [RedisValue] {
        guard !commands.isEmpty else { return [] }
        return try await pick().submit(commands)
    }

    /// Runs a Lua script by SHA, loading it first if this client has not yet, and again on `NOSCRIPT`.
    @discardableResult
    public func run(_ script: RedisScript, keys: [String], arguments: [String]) async throws -> RedisValue {
        let thread = pick()
        for attempt in 0..<2 {
            let sha = try await sha(of: script, on: thread, reload: attempt > 0)
            let reply = try await thread.submit([["EVALSHA", sha, String(keys.count)] + keys + arguments])[0]
            if case .error(let message) = reply {
                if message.hasPrefix("NOSCRIPT") { continue }
                throw RedisError(.server, "\(script.name): \(message)")
            }
            return reply
        }
        throw RedisError(.server, "\(script.name): the server keeps answering NOSCRIPT")
    }

    private func sha(of script: RedisScript, on thread: ConnectionThread, reload: Bool) async throws -> String {
        if !reload, let sha = scriptSHAs.withLock({ $0[script.number] }) { return sha }
        let reply = try await thread.submit([["SCRIPT", "LOAD", script.source]])[0]
        guard let sha = reply.string, !sha.isEmpty, !(reply.isError) else {
            throw RedisError(.server, "SCRIPT LOAD \(script.name): \(reply)")
        }
        scriptSHAs.withLock { $0[script.number] = sha }
        return sha
    }

    /// Deletes every key matching `pattern` (SCAN + UNLINK in pages, never `KEYS`). Returns how many.
    @discardableResult
    public func unlinkKeys(matching pattern: String) async throws -> Int {
        var count = 0
        try await forEachKeyBatch(matching: pattern) { keys in count += try await send(["UNLINK"] + keys).int ?? 0 }
        return count
    }

    /// Calls `body` with every key matching `pattern`, a `SCAN` page (up to about 1,000 keys) at a time; a key may
    /// come twice when the keyspace changes meanwhile, as `SCAN` promises no more.
    public func forEachKeyBatch(matching pattern: String, _ body: ([String]) async throws -> Void) async throws {
        var cursor = "0"
        repeat {
            let reply = try await send(["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"]).array ?? []
            cursor = reply.first?.string ?? "0"
            let keys = reply.count > 1 ? (reply[1].array ?? []).compactMap(\.string) : []
            if !keys.isEmpty { try await body(keys) }
        } while cursor != "0"
    }

    /// A connection of its own, for blocking commands. Close it when done.
    public func blockingConnection(name: String = "redis-blocking") -> BlockingConnection {
        BlockingConnection(thread: ConnectionThread(name: name, configuration: configuration, logger: logger), pool: self)
    }
}

extension RedisValue {
    var isError: Bool {
        if case .error = self { return true }
        return false
    }
}

/// A dedicated connection (and thread) for blocking commands.
public final class BlockingConnection: Sendable {
    private let thread: ConnectionThread
    private let pool: RedisClient

    init(thread: ConnectionThread, pool: RedisClient) {
        self.thread = thread
        self.pool = pool
    }

    deinit { thread.close() }

    /// Sends a command that may block on the server for up to `blockFor`.
    public func send(_ arguments: [String], blockFor: Duration) async throws -> RedisValue {
        let reply = try await thread.submit([arguments], blockFor: blockFor)[0]
        if case .error(let message) = reply { throw RedisError(.server, message) }
        return reply
    }

    /// Waits up to `timeout` for the next message pushed to this connection (after `SUBSCRIBE`).
    /// A timeout throws `.timeout` and drops the connection (and with it the subscription).
    public func receive(timeout: Duration) async throws -> RedisValue {
        try await thread.submit([], blockFor: timeout)[0]
    }

    /// This connection's `CLIENT ID` on the server (0 before it first connects).
    public var clientID: Int { thread.clientID }

    /// Ends a command blocked on the server now (it returns its timeout reply), through the pool. A command not yet
    /// blocked on the server is not affected.
    public func unblock() async {
        let id = thread.clientID
        guard id != 0 else { return }
        _ = try? await pool.send(["CLIENT", "UNBLOCK", String(id)])
    }

    /// Closes this connection on the server (`CLIENT KILL ID`, through the pool), so a read waiting for a pushed
    /// message (a subscriber's) fails now instead of at its timeout: how a subscriber is stopped at shutdown.
    public func disconnect() async {
        let id = thread.clientID
        guard id != 0 else { return }
        _ = try? await pool.send(["CLIENT", "KILL", "ID", String(id)])
    }

    public func close() { thread.close() }
}
