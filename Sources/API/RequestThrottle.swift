import Crypto
import Foundation
import Redis

/// Counts requests per subject (an email, by its SHA-256: no address is stored in Redis) and per client address in
/// fixed windows shared by every API process, and refuses past either limit with 429 `RATE_LIMITED` and `Retry-After`.
struct RequestThrottle: Sendable {
    let redis: RedisClient
    let prefix: String
    let perSubject: (limit: Int, window: Duration)
    let perIP: (limit: Int, window: Duration)

    func admit(email: String, ip: String?) async throws {
        let digest = SHA256.hash(data: Array(email.lowercased().utf8)).map { String(format: "%02x", $0) }.joined()
        var counters = [("\(prefix):email:\(digest)", perSubject, "Too many sign-in links asked for this email")]
        if let ip { counters.append(("\(prefix):ip:\(ip)", perIP, "Too many sign-in links asked from this address")) }
        let replies = try await redis.pipeline(
            counters.flatMap { key, rule, _ in
                [["INCR", key], ["PEXPIRE", key, String(rule.window.milliseconds), "NX"], ["PTTL", key]]
            })
        for (index, (_, rule, message)) in counters.enumerated() where (replies[index * 3].int ?? 0) > rule.limit {
            throw LoginThrottle.refusal(retryAfterMs: replies[index * 3 + 2].int ?? 1000, message)
        }
    }
}
