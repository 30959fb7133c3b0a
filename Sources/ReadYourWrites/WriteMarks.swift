import Durations
import Postgres
import Redis

/// The primary's WAL position after each user's last write, in Redis so that every API process reads the user's
/// writes wherever they were made: `<prefix>:wrote:{<user id>}`, the 16-digit hexadecimal LSN (so that comparing the
/// text compares the positions), kept for `lifetime` after the last write. A replica that has replayed a user's mark
/// has every write of theirs; past `lifetime` (a few lag bounds) any usable replica has.
package struct WriteMarks: Sendable {
    let redis: RedisClient
    let prefix: String
    let lifetime: Duration

    package init(redis: RedisClient, prefix: String, lifetime: Duration) {
        self.redis = redis
        self.prefix = prefix
        self.lifetime = lifetime
    }

    package func key(_ userID: String) -> String { "\(prefix):wrote:{\(userID)}" }

    /// Raises the user's mark to `lsn` (two writes that race keep the later position) and renews its lifetime.
    package func mark(_ userID: String, at lsn: UInt64) async throws {
        let text = String(lsn, radix: 16, uppercase: true)
        let padded = String(repeating: "0", count: max(0, 16 - text.count)) + text
        _ = try await redis.run(Self.raise, keys: [key(userID)], arguments: [padded, String(lifetime.milliseconds)])
    }

    /// Raises the user's mark to the primary's position now: call it once their write committed.
    package func markWrite(by userID: String, on primary: some PostgresQueryable) async throws {
        try await mark(userID, at: try await PostgresLSN.current(on: primary))
    }

    /// The user's mark, or nil when they wrote nothing within `lifetime`.
    package func mark(of userID: String) async throws -> UInt64? {
        try await redis.send(["GET", key(userID)]).string.flatMap { UInt64($0, radix: 16) }
    }

    /// KEYS[1] the mark; ARGV[1] the new position (16 hexadecimal digits), ARGV[2] its lifetime in ms.
    static let raise = RedisScript(
        name: "write-mark",
        source: """
            local current = redis.call('GET', KEYS[1])
            if current and current >= ARGV[1] then
              redis.call('PEXPIRE', KEYS[1], ARGV[2])
            else
              redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
            end
            return 1
            """)
}
