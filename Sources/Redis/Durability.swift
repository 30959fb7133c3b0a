/// Writes that must reach replicas before they count: `WAIT replicas timeout` on the writes' own connection, after
/// them. Redis replication is asynchronous; without it a write acknowledged by a master that dies before its replica
/// copied it is lost when the replica takes over. The durable writes queued on one connection together share one `WAIT`
/// (see `ConnectionThread`).
public struct Durability: Sendable, Equatable {
    /// Replicas that must acknowledge the writes (at least 1).
    public var replicas: Int
    /// How long to wait for them.
    public var timeout: Duration

    public init(replicas: Int = 1, timeout: Duration = .seconds(1)) {
        self.replicas = max(1, replicas)
        self.timeout = timeout
    }

    var command: [String] { ["WAIT", String(replicas), String(max(1, timeout.milliseconds))] }

    /// Throws unless `WAIT`'s reply says enough replicas have the writes.
    func check(acknowledged reply: RedisValue) throws(RedisError) {
        guard let acknowledged = reply.int else { throw RedisError(.notReplicated, "WAIT answered \(reply)") }
        guard acknowledged >= replicas else {
            throw RedisError(
                .notReplicated,
                "the write reached \(acknowledged) of \(replicas) replica(s) within \(timeout); it is on the master, and may be lost with it"
            )
        }
    }
}

extension Duration {
    fileprivate var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
