import Foundation
import Logging
import Synchronization
import Traces

/// A pool of Redis connections, each owned by its own thread. Safe to share across tasks.
///
/// Concurrent calls are pipelined automatically per connection. Blocking commands (`XREADGROUP … BLOCK`,
/// `BLPOP`) must use a ``BlockingConnection`` so they never hold up the pool.
///
/// The client finds out by itself whether its address is a standalone server or a node of a Redis Cluster (its first
/// call asks `CLUSTER SLOTS`). On a cluster it learns the slot map, keeps a pool per node, sends each command to the
/// node of its keys' slot (a pipeline is split by node and its replies put back in order), follows `MOVED` and `ASK`,
/// and reads the map again when a node moves or stops answering. A command a cluster cannot answer as asked (keys in
/// several slots, `SCAN` or `DBSIZE` that would answer for one node) throws ``RedisError/Code/unroutable``.
public final class RedisClient: Sendable {
    public let configuration: RedisConfiguration
    /// The first address's connections: the standalone server's, or the first node asked for a cluster's map.
    private let seed: NodePool
    private let mode = Atomic<UInt8>(Mode.unknown)
    private let cluster = Mutex<ClusterTopology?>(nil)
    private let scriptSHAs = Mutex<[Int: String]>([:])
    private let logger: Logger

    private enum Mode {
        static let unknown: UInt8 = 0
        static let standalone: UInt8 = 1
        static let cluster: UInt8 = 2
    }

    public init(configuration: RedisConfiguration, logger: Logger = Logger(label: "redis")) {
        self.configuration = configuration
        self.logger = logger
        self.seed = NodePool(endpoint: configuration.seeds[0], configuration: configuration, logger: logger)
    }

    public convenience init(url: String, logger: Logger = Logger(label: "redis")) throws(RedisError) {
        self.init(configuration: try RedisConfiguration(url: url), logger: logger)
    }

    deinit { close() }

    /// Stops the connection threads once their queued requests are answered.
    public func close() {
        seed.close()
        cluster.withLock { $0 }?.close()
    }

    /// A task executor on one of the pool's connection threads. A task that prefers it
    /// (`withTaskExecutorPreference(redis.executor) { … }`) sends its commands on that connection and is resumed
    /// there, without a thread switch each way: for a caller that awaits one command after another (a producer
    /// enqueueing one job at a time). Its code holds up the connection while it runs, so keep it short and
    /// non-blocking. (On a cluster, only commands for the first address's node stay on it.)
    public var executor: any TaskExecutor { seed.threads[0] }

    /// True when the caller runs on one of this pool's connection threads (a task preferring ``executor``).
    var isOnConnectionThread: Bool { seed.isCurrent }

    /// Whether the server is a cluster (asked on first use).
    public var isCluster: Bool {
        get async throws { try await !isStandalone }
    }

    private var isStandalone: Bool {
        get async throws {
            switch mode.load(ordering: .acquiring) {
            case Mode.standalone: return true
            case Mode.cluster: return false
            default: return try await discover() == nil
            }
        }
    }

    private var topology: ClusterTopology {
        get async throws {
            if let topology = cluster.withLock({ $0 }) { return topology }
            guard let topology = try await discover() else { throw RedisError(.unroutable, "not a cluster") }
            return topology
        }
    }

    // MARK: Commands

    /// Sends one command. An error reply throws `RedisError` with code `.server`.
    @discardableResult
    public func send(_ arguments: [String]) async throws -> RedisValue {
        let reply: RedisValue
        if try await isStandalone {
            reply = try await seed.pick().submit([arguments])[0]
        } else {
            reply = try await send([arguments], through: topology)[0]
        }
        if case .error(let message) = reply { throw RedisError(.server, message) }
        return reply
    }

    @discardableResult
    public func send(_ arguments: String...) async throws -> RedisValue {
        try await send(arguments)
    }

    /// Sends the commands in one round-trip (one per node on a cluster). Error replies are returned in place as
    /// `.error`, not thrown, so one failed command does not hide the others' results.
    ///
    /// With a `durability`, each node's commands are followed on the same connection by `WAIT`: the call returns once
    /// `durability.replicas` replicas acknowledged every write before it, or throws ``RedisError/Code/notReplicated``
    /// after `durability.timeout` (the writes were made on the master, and may yet be lost with it).
    public func pipeline(_ commands: [[String]], durability: Durability? = nil) async throws -> [RedisValue] {
        guard !commands.isEmpty else { return [] }
        if try await isStandalone { return try await seed.pick().submit(commands, durability: durability) }
        return try await send(commands, through: topology, durability: durability)
    }

    /// Sends `command` to every master of a cluster (to the one server otherwise), for what concerns every node:
    /// `FLUSHALL`, `DBSIZE`, `SCRIPT FLUSH`, `INFO`. Replies in the masters' order.
    public func onEveryMaster(_ command: [String]) async throws -> [RedisValue] {
        if try await isStandalone { return try await seed.pick().submit([command]) }
        let topology = try await topology
        var replies: [RedisValue] = []
        for master in topology.masters { replies += try await submit([command], to: master, topology) }
        return replies
    }

    /// Runs a Lua script by SHA, loading it first if this client has not yet, and again on `NOSCRIPT`. On a cluster
    /// it goes to the node of its keys' slot; a node that lacks it is sent the source (`EVAL`, which loads it there).
    /// With a `durability`, the script is followed on its connection by `WAIT` (see ``pipeline(_:durability:)``).
    @discardableResult
    public func run(_ script: RedisScript, keys: [String], arguments: [String], durability: Durability? = nil) async throws
        -> RedisValue
    {
        if TraceSwitch.inSampledStatementTrace {
            return try await ScriptSpan.traced(script, configuration) {
                try await runUntraced(script, keys: keys, arguments: arguments, durability: durability)
            }
        }
        return try await runUntraced(script, keys: keys, arguments: arguments, durability: durability)
    }

    private func runUntraced(_ script: RedisScript, keys: [String], arguments: [String], durability: Durability?) async throws
        -> RedisValue
    {
        if try await !isStandalone { return try await runClustered(script, keys: keys, arguments: arguments, durability: durability) }
        let thread = seed.pick()
        for attempt in 0..<2 {
            let sha = try await sha(of: script, on: thread, reload: attempt > 0)
            let reply = try await thread.submit([Self.evalsha(sha, keys, arguments)], durability: durability)[0]
            if try !Self.noScript(reply, script) { return reply }
        }
        throw RedisError(.server, "\(script.name): the server keeps answering NOSCRIPT")
    }

    // `run`'s synchronous parts are functions of their own: a job waiting on a script keeps `run`'s async frame.

    @inline(never)
    private static func evalsha(_ sha: String, _ keys: [String], _ arguments: [String]) -> [String] {
        ["EVALSHA", sha, String(keys.count)] + keys + arguments
    }

    /// True when the server lacks the script; throws its other error replies.
    @inline(never)
    private static func noScript(_ reply: RedisValue, _ script: RedisScript) throws -> Bool {
        guard case .error(let message) = reply else { return false }
        if message.hasPrefix("NOSCRIPT") { return true }
        throw RedisError(.server, "\(script.name): \(message)")
    }

    private func runClustered(_ script: RedisScript, keys: [String], arguments: [String], durability: Durability?) async throws
        -> RedisValue
    {
        let topology = try await topology
        let sha = try await sha(of: script, on: topology.pool(for: topology.anyMaster()).pick(), reload: false)
        var reply = try await send([Self.evalsha(sha, keys, arguments)], through: topology, durability: durability)[0]
        if try Self.noScript(reply, script) {
            let eval = ["EVAL", script.source, String(keys.count)] + keys + arguments
            reply = try await send([eval], through: topology, durability: durability)[0]
            if case .error(let message) = reply { throw RedisError(.server, "\(script.name): \(message)") }
        }
        return reply
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
        let standalone = try await isStandalone
        var count = 0
        try await forEachKeyBatch(matching: pattern) { keys in
            if standalone {
                count += try await send(["UNLINK"] + keys).int ?? 0
            } else {
                // A node's page holds keys of many slots: one UNLINK each, in one pipeline.
                count += try await pipeline(keys.map { ["UNLINK", $0] }).reduce(0) { $0 + ($1.int ?? 0) }
            }
        }
        return count
    }

    /// Calls `body` with every key matching `pattern`, a `SCAN` page (up to about 1,000 keys) at a time, from every
    /// master of a cluster; a key may come twice when the keyspace changes meanwhile, as `SCAN` promises no more.
    public func forEachKeyBatch(matching pattern: String, _ body: ([String]) async throws -> Void) async throws {
        let topology = try await isStandalone ? nil : try await self.topology
        for node in topology?.masters ?? [seed.endpoint] {
            var cursor = "0"
            repeat {
                let command = ["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"]
                let reply =
                    if let topology { try await submit([command], to: node, topology)[0] } else {
                        try await seed.pick().submit([command])[0]
                    }
                if case .error(let message) = reply { throw RedisError(.server, message) }
                let page = reply.array ?? []
                cursor = page.first?.string ?? "0"
                let keys = page.count > 1 ? (page[1].array ?? []).compactMap(\.string) : []
                if !keys.isEmpty { try await body(keys) }
            } while cursor != "0"
        }
    }

    /// A connection of its own, for blocking commands. Close it when done.
    public func blockingConnection(name: String = "redis-blocking") -> BlockingConnection {
        BlockingConnection(name: name, pool: self, logger: logger)
    }

    // MARK: Cluster

    /// Learns whether the server is a cluster: the cluster's topology, or nil for a standalone server.
    @discardableResult
    private func discover() async throws -> ClusterTopology? {
        guard configuration.followsCluster else {
            mode.store(Mode.standalone, ordering: .releasing)
            return nil
        }
        var lastError: any Error = RedisError(.connection, "no address to connect to")
        for (index, endpoint) in configuration.seeds.enumerated() {
            let pool = index == 0 ? seed : NodePool(endpoint: endpoint, configuration: configuration, logger: logger)
            let reply: RedisValue
            do {
                reply = try await pool.pick().submit([["CLUSTER", "SLOTS"]])[0]
            } catch {
                if index > 0 { pool.close() }
                lastError = error
                continue
            }
            if case .error = reply {
                if index > 0 { pool.close() }
                guard configuration.otherSeeds.isEmpty else {
                    throw RedisError(.invalidURL, "\(endpoint) is not a cluster node, and a list of addresses names a cluster's")
                }
                mode.store(Mode.standalone, ordering: .releasing)
                return nil
            }
            guard let map = SlotMap(slots: reply, answeredBy: endpoint) else {
                if index > 0 { pool.close() }
                lastError = RedisError(.connection, "the cluster node \(endpoint) serves no slot yet (cluster not set up?)")
                continue
            }
            let found = ClusterTopology(map: map, pools: [endpoint: pool], configuration: configuration, logger: logger)
            let (topology, installed) = cluster.withLock { current in
                if let current { return (current, false) }
                current = found
                return (found, true)
            }
            if installed {
                mode.store(Mode.cluster, ordering: .releasing)
                logger.info("redis cluster", metadata: ["masters": "\(map.servingMasters.map(\.description))"])
            } else if index > 0 {
                pool.close()
            }
            return topology
        }
        throw lastError
    }

    /// Sends each command to its node (one pipeline per node, at once), follows redirections, and returns the
    /// replies in the commands' order. A `MULTI`…`EXEC` block goes whole to the node of its first key.
    private func send(_ commands: [[String]], through topology: ClusterTopology, durability: Durability? = nil) async throws
        -> [RedisValue]
    {
        var targets: [RedisEndpoint] = []
        targets.reserveCapacity(commands.count)
        var blocks: [Range<Int>] = []
        var keyless: RedisEndpoint?
        var index = 0
        while index < commands.count {
            guard commands[index].first?.uppercased() == "MULTI" else {
                targets.append(try node(of: commands[index], topology, keyless: &keyless))
                index += 1
                continue
            }
            let end = commands[index...].firstIndex { ["EXEC", "DISCARD"].contains($0.first?.uppercased()) } ?? commands.count - 1
            let block = index..<(end + 1)
            var node: RedisEndpoint?
            for command in commands[block] where CommandRoute.of(command) != .anyNode {
                node = try self.node(of: command, topology, keyless: &keyless)
                break
            }
            let blockNode = try node ?? self.node(of: ["MULTI"], topology, keyless: &keyless)
            targets += Array(repeating: blockNode, count: block.count)
            blocks.append(block)
            index = end + 1
        }
        var replies: [RedisValue]
        if targets.allSatisfy({ $0 == targets[0] }) {
            replies = try await submit(commands, to: targets[0], topology, durability: durability)
        } else {
            replies = Array(repeating: .null, count: commands.count)
            let groups = Dictionary(grouping: commands.indices, by: { targets[$0] })
            try await withThrowingTaskGroup(of: ([Int], [RedisValue]).self) { group in
                for (node, indices) in groups {
                    group.addTask {
                        (indices, try await self.submit(indices.map { commands[$0] }, to: node, topology, durability: durability))
                    }
                }
                for try await (indices, answers) in group {
                    for (index, answer) in zip(indices, answers) { replies[index] = answer }
                }
            }
        }
        var inBlock = IndexSet()
        for block in blocks {
            inBlock.insert(integersIn: block)
            // A slot that moved: its commands were refused and EXEC aborted; the whole block goes again, to the
            // slot's new node.
            for case .error(let message) in replies[block] {
                guard let moved = Redirection(message, defaultHost: configuration.host), moved.kind == .moved else { continue }
                topology.moved(slot: moved.slot, to: moved.node)
                replies.replaceSubrange(
                    block, with: try await submit(Array(commands[block]), to: moved.node, topology, durability: durability))
                break
            }
        }
        for index in replies.indices where !inBlock.contains(index) {
            replies[index] = try await redirected(commands[index], replies[index], topology, durability: durability)
        }
        return replies
    }

    /// The master for `command`: its keys' slot's, or for a keyless one, one master for the whole call.
    private func node(of command: [String], _ topology: ClusterTopology, keyless: inout RedisEndpoint?) throws -> RedisEndpoint {
        switch CommandRoute.of(command) {
        case .unroutable(let why): throw RedisError(.unroutable, why)
        case .anyNode:
            let node = keyless ?? topology.anyMaster()
            keyless = node
            return node
        case .slot(let slot):
            guard let master = topology.master(of: slot) else {
                topology.refreshSoon()
                throw RedisError(.connection, "no master serves slot \(slot) (is the cluster failing over?)")
            }
            return master
        }
    }

    /// A reply once its redirections are followed: `MOVED` (sent again to the slot's new node, which the map learns),
    /// `ASK` (sent once to the importing node after `ASKING`), `TRYAGAIN` (sent again shortly). At most 5 times.
    private func redirected(
        _ command: [String], _ reply: RedisValue, _ topology: ClusterTopology, durability: Durability? = nil
    ) async throws -> RedisValue {
        var reply = reply
        for _ in 0..<5 {
            guard case .error(let message) = reply else { return reply }
            if message.hasPrefix("TRYAGAIN") {
                try await Task.sleep(for: .milliseconds(20))
                reply = try await send([command], through: topology, durability: durability)[0]
                continue
            }
            guard let redirection = Redirection(message, defaultHost: configuration.host) else { return reply }
            switch redirection.kind {
            case .moved:
                topology.moved(slot: redirection.slot, to: redirection.node)
                reply = try await submit([command], to: redirection.node, topology, durability: durability)[0]
            case .ask:
                reply = try await submit([["ASKING"], command], to: redirection.node, topology, durability: durability)[1]
            }
        }
        return reply
    }

    /// One node's share of a call. A node that stops answering makes the map be read again (it may have failed over).
    private func submit(
        _ commands: [[String]], to node: RedisEndpoint, _ topology: ClusterTopology, durability: Durability? = nil
    ) async throws -> [RedisValue] {
        do {
            return try await topology.pool(for: node).pick().submit(commands, durability: durability)
        } catch let error as RedisError where error.isTransient {
            topology.refreshSoon()
            throw error
        }
    }

    /// Where a blocking connection should send `command` (a keyless one stays on `current`, its node so far).
    func node(for command: [String], current: RedisEndpoint?) async throws -> RedisEndpoint {
        if try await isStandalone { return seed.endpoint }
        let topology = try await topology
        var keyless = current
        return try node(of: command, topology, keyless: &keyless)
    }

    /// Sends `command` to one node (a blocking connection's own, to unblock or close it there).
    func send(_ command: [String], to node: RedisEndpoint) async throws -> RedisValue {
        if try await isStandalone { return try await seed.pick().submit([command])[0] }
        return try await submit([command], to: node, topology)[0]
    }

    /// What a blocking connection learned: a `MOVED` reply, or a node that stopped answering.
    func noteRedirection(_ redirection: Redirection) async throws {
        if redirection.kind == .moved { try await topology.moved(slot: redirection.slot, to: redirection.node) }
    }

    func noteUnreachable() {
        cluster.withLock { $0 }?.refreshSoon()
    }
}

extension RedisValue {
    public var isError: Bool {
        if case .error = self { return true }
        return false
    }
}
