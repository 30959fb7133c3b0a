import Logging
import Synchronization

/// What a client knows of its cluster: the slot map and one pool of connections per node it has talked to. The map is
/// read again (`CLUSTER SLOTS`) after a `MOVED` reply or a node that stopped answering, at most once per
/// `refreshInterval`, from whichever known node answers first.
final class ClusterTopology: Sendable {
    private struct State {
        var map: SlotMap
        var pools: [RedisEndpoint: NodePool]
        var refreshing = false
        var lastRefresh = ContinuousClock.now
    }

    private let state: Mutex<State>
    private let configuration: RedisConfiguration
    private let logger: Logger
    private let turn = Atomic<Int>(0)
    static let refreshInterval = Duration.milliseconds(200)

    init(map: SlotMap, pools: [RedisEndpoint: NodePool], configuration: RedisConfiguration, logger: Logger) {
        self.state = Mutex(State(map: map, pools: pools))
        self.configuration = configuration
        self.logger = logger
    }

    /// The pool of `endpoint`, opened on first use.
    func pool(for endpoint: RedisEndpoint) -> NodePool {
        state.withLock { state in
            if let pool = state.pools[endpoint] { return pool }
            let pool = NodePool(endpoint: endpoint, configuration: configuration, logger: logger)
            state.pools[endpoint] = pool
            return pool
        }
    }

    func master(of slot: Int) -> RedisEndpoint? { state.withLock { $0.map.master(of: slot) } }

    /// A master in turn, for a command that names no key.
    func anyMaster() -> RedisEndpoint {
        let masters = self.masters
        return masters[turn.wrappingAdd(1, ordering: .relaxed).oldValue % masters.count]
    }

    /// The masters serving at least one slot now.
    var masters: [RedisEndpoint] { state.withLock { $0.map.servingMasters } }

    /// A `MOVED` reply: the slot is served by `node` from now on; the rest of the map is read again soon.
    func moved(slot: Int, to node: RedisEndpoint) {
        state.withLock { $0.map.move(slot: slot, to: node) }
        refreshSoon()
    }

    /// Reads the map again in the background, unless a reading is under way or one ended less than
    /// `refreshInterval` ago.
    func refreshSoon() {
        let start = state.withLock { state -> Bool in
            guard !state.refreshing, ContinuousClock.now - state.lastRefresh >= Self.refreshInterval else { return false }
            state.refreshing = true
            return true
        }
        guard start else { return }
        Task {
            let map = await self.readMap()
            self.state.withLock { state in
                if let map, map != state.map {
                    self.logger.info("redis cluster map changed", metadata: ["masters": "\(map.masters.map(\.description))"])
                    state.map = map
                }
                state.refreshing = false
                state.lastRefresh = .now
            }
        }
    }

    /// Asks the known nodes, then the configured seeds, for the map; nil when none answers.
    private func readMap() async -> SlotMap? {
        let candidates = state.withLock { state in state.map.masters + state.map.nodes }
        var asked = Set<RedisEndpoint>()
        for node in candidates + configuration.seeds where asked.insert(node).inserted {
            if let map = try? await Self.readMap(from: pool(for: node)) { return map }
        }
        return nil
    }

    /// `CLUSTER SLOTS` from one node; nil when it is not a cluster node, throws when it cannot be reached.
    static func readMap(from pool: NodePool) async throws -> SlotMap? {
        let reply = try await pool.pick().submit([["CLUSTER", "SLOTS"]])[0]
        return SlotMap(slots: reply, answeredBy: pool.endpoint)
    }

    func close() {
        for pool in state.withLock({ Array($0.pools.values) }) { pool.close() }
    }
}
