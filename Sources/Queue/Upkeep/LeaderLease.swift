import Redis

/// A lease in Redis that one process at a time holds: `key` holds the holder's name and expires `ttl` after its last
/// renewal, so a holder that dies (or hangs) hands the lease over when it runs out, and one that stops cleanly hands
/// it over at once (`release`). The holder's name is checked on every renewal and release: a process whose lease ran
/// out while it was paused cannot renew or delete its successor's.
public struct LeaderLease: Sendable {
    let redis: RedisClient
    public let key: String
    public let holder: String
    public let ttl: Duration

    public init(redis: RedisClient, key: String, holder: String, ttl: Duration) {
        self.redis = redis
        self.key = key
        self.holder = holder
        self.ttl = ttl
    }

    /// Takes the lease when nobody holds it, or renews it when `holder` does. True when `holder` holds it now.
    public func acquireOrRenew() async throws -> Bool {
        try await redis.run(LeaseAcquireCall(key: key, holder: holder, ttlMs: ttl.milliseconds)).int == 1
    }

    /// Gives the lease up if `holder` still holds it.
    public func release() async throws {
        _ = try await redis.run(LeaseReleaseCall(key: key, holder: holder))
    }

    /// Who holds the lease now, if anyone.
    public func currentHolder() async throws -> String? {
        try await redis.send(["GET", key]).string
    }
}
