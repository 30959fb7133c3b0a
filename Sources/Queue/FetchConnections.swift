import Redis
import Synchronization

/// The blocking connections one fetcher waits for jobs on: one for all its queues on a standalone server, one per
/// queue on a Redis Cluster, where a read over several queues' streams (several slots) is refused, and the queues'
/// nodes may differ.
public final class FetchConnections: Sendable {
    private let redis: RedisClient
    private let name: String
    private let connections = Mutex<[String: BlockingConnection]>([:])

    public init(redis: RedisClient, name: String = "fetch") {
        self.redis = redis
        self.name = name
    }

    deinit { close() }

    /// The connection reading `queue` (`nil`: the one shared by every queue).
    func connection(for queue: String?) -> BlockingConnection {
        connections.withLock { connections in
            if let connection = connections[queue ?? ""] { return connection }
            let connection = redis.blockingConnection(name: name)
            connections[queue ?? ""] = connection
            return connection
        }
    }

    /// Ends every read blocked on the server now (a read not blocked yet is not affected).
    public func unblock() async {
        await unblock(connections.withLock { Array($0.values) })
    }

    /// Ends the reads of `queues` blocked on the server now, all at once (each on its node).
    func unblock(queues: some Sequence<String>) async {
        await unblock(connections.withLock { connections in queues.compactMap { connections[$0] } })
    }

    private func unblock(_ chosen: [BlockingConnection]) async {
        if chosen.count == 1 { return await chosen[0].unblock() }
        await withTaskGroup(of: Void.self) { group in
            for connection in chosen { group.addTask { await connection.unblock() } }
        }
    }

    public func close() {
        for connection in connections.withLock({ Array($0.values) }) { connection.close() }
    }
}
