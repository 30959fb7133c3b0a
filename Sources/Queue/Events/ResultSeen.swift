import Redis

/// Whether a job's end reached its owner: the API marks it when it answers a request with it (the short wait of
/// `POST analyze`/`chat`, a long poll, an event stream's last event), and a push about the job is sent only while it is
/// not marked. The mark lives an hour, long after any push would have gone.
public struct ResultSeen: Sendable {
    public static let lifetime: Duration = .seconds(3600)

    let redis: RedisClient
    let prefix: String

    public init(redis: RedisClient, prefix: String) {
        self.redis = redis
        self.prefix = prefix
    }

    public func mark(_ id: JobID, queue: String) async throws {
        _ = try await redis.send([
            "SET", QueueKeys(prefix: prefix, queue: queue).resultSeen(id), "1", "PX", String(Self.lifetime.milliseconds),
        ])
    }

    public func isMarked(_ id: JobID, queue: String) async throws -> Bool {
        try await redis.send(["EXISTS", QueueKeys(prefix: prefix, queue: queue).resultSeen(id)]).int == 1
    }
}
