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
        try await redis.run(Self.acquire, keys: [key], arguments: [holder, String(ttl.milliseconds)]).int == 1
    }

    /// Gives the lease up if `holder` still holds it.
    public func release() async throws {
        _ = try await redis.run(Self.release, keys: [key], arguments: [holder])
    }

    /// Who holds the lease now, if anyone.
    public func currentHolder() async throws -> String? {
        try await redis.send(["GET", key]).string
    }

    /// KEYS: lease. ARGV: holder, ttl ms. Returns 1 when the holder has the lease.
    static let acquire = RedisScript(
        name: "lease-acquire",
        source: """
            local current = redis.call('GET', KEYS[1])
            if current == ARGV[1] then
              redis.call('PEXPIRE', KEYS[1], ARGV[2])
              return 1
            end
            if current then return 0 end
            redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
            return 1
            """)

    /// KEYS: lease. ARGV: holder. Deletes the lease only if the holder still has it.
    static let release = RedisScript(
        name: "lease-release",
        source: """
            if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
            return 0
            """)
}
