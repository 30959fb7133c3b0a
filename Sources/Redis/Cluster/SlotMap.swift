/// Which node serves each of a cluster's 16,384 slots, read from `CLUSTER SLOTS`.
struct SlotMap: Sendable, Equatable {
    /// The master of each slot, as an index into `masters`; -1 for a slot no node serves.
    private var owner: [Int16]
    /// The masters, in the order `CLUSTER SLOTS` first names them.
    private(set) var masters: [RedisEndpoint]
    /// Every node named (masters and their replicas): where to ask for a new map when the known ones are gone.
    private(set) var nodes: [RedisEndpoint]
    /// The masters that serve at least one slot.
    private(set) var servingMasters: [RedisEndpoint] = []

    /// Parses a `CLUSTER SLOTS` reply: `[start, end, [host, port, id, …], replica…]` per range. A node whose host is
    /// empty is the one that answered (`answeredBy`).
    init?(slots reply: RedisValue, answeredBy: RedisEndpoint) {
        guard let ranges = reply.array, !ranges.isEmpty else { return nil }
        owner = Array(repeating: -1, count: HashSlot.count)
        masters = []
        nodes = []
        for range in ranges {
            guard let fields = range.array, fields.count >= 3, let start = fields[0].int, let end = fields[1].int,
                (0..<HashSlot.count).contains(start), (start..<HashSlot.count).contains(end)
            else { return nil }
            let servers = fields[2...].compactMap { Self.endpoint($0, answeredBy: answeredBy) }
            guard let master = servers.first else { return nil }
            let index: Int
            if let known = masters.firstIndex(of: master) {
                index = known
            } else {
                index = masters.count
                masters.append(master)
            }
            for server in servers where !nodes.contains(server) { nodes.append(server) }
            for slot in start...end { owner[slot] = Int16(index) }
        }
        servingMasters = masters
    }

    private static func endpoint(_ value: RedisValue, answeredBy: RedisEndpoint) -> RedisEndpoint? {
        guard let fields = value.array, fields.count >= 2, let port = fields[1].int, port > 0 else { return nil }
        let host = fields[0].string ?? ""
        // "?" or "": the node does not know its own address; it is the one we asked.
        return RedisEndpoint(host: host.isEmpty || host == "?" ? answeredBy.host : host, port: port)
    }

    /// The master serving `slot`, nil when none does (the cluster is incomplete).
    func master(of slot: Int) -> RedisEndpoint? {
        let index = Int(owner[slot])
        return index >= 0 ? masters[index] : nil
    }

    /// Points `slot` at `node` (a `MOVED` reply said so) until the next full reading.
    mutating func move(slot: Int, to node: RedisEndpoint) {
        if let index = masters.firstIndex(of: node) {
            owner[slot] = Int16(index)
        } else {
            owner[slot] = Int16(masters.count)
            masters.append(node)
            if !nodes.contains(node) { nodes.append(node) }
        }
        let serving = Set(owner)
        servingMasters = masters.indices.filter { serving.contains(Int16($0)) }.map { masters[$0] }
    }

    /// How many slots have no master.
    var uncoveredSlots: Int { owner.lazy.filter { $0 < 0 }.count }
}
