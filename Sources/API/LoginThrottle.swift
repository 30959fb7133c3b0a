import Crypto
import Durations
import Foundation
import HTTPTypes
import Redis

/// Slows down password guessing, in Redis so every API process shares the counts: at most `maxFailures`
/// failed logins per account and `maxAttemptsPerIP` attempts per client address in each window. Accounts are
/// keyed by the SHA-256 of the email, so no address is stored in Redis.
package struct LoginThrottle: Sendable {
    package var maxFailures: Int
    package var failureWindow: Duration
    package var maxAttemptsPerIP: Int
    package var ipWindow: Duration
    let redis: RedisClient
    let prefix: String

    package init(
        redis: RedisClient, prefix: String, maxFailures: Int = 10, failureWindow: Duration = .seconds(900),
        maxAttemptsPerIP: Int = 60, ipWindow: Duration = .seconds(60)
    ) {
        self.redis = redis
        self.prefix = prefix
        self.maxFailures = maxFailures
        self.failureWindow = failureWindow
        self.maxAttemptsPerIP = maxAttemptsPerIP
        self.ipWindow = ipWindow
    }

    private func accountKey(_ email: String) -> String {
        let digest = SHA256.hash(data: Array(email.lowercased().utf8)).map { String(format: "%02x", $0) }.joined()
        return "\(prefix):throttle:login:account:\(digest)"
    }

    private func ipKey(_ ip: String) -> String { "\(prefix):throttle:login:ip:\(ip)" }

    /// Counts this attempt against the address and refuses (429, with Retry-After) when either limit is spent.
    func admit(email: String, ip: String?) async throws {
        var commands: [[String]] = [["GET", accountKey(email)], ["PTTL", accountKey(email)]]
        if let ip {
            commands += [["INCR", ipKey(ip)], ["PEXPIRE", ipKey(ip), String(ipWindow.milliseconds), "NX"], ["PTTL", ipKey(ip)]]
        }
        let replies = try await redis.pipeline(commands)
        let failures = replies[0].string.flatMap(Int.init) ?? 0
        if failures >= maxFailures {
            throw Self.refusal(retryAfterMs: replies[1].int ?? 1000, "Too many failed logins for this account")
        }
        if ip != nil, let attempts = replies[2].int, attempts > maxAttemptsPerIP {
            throw Self.refusal(retryAfterMs: replies[4].int ?? 1000, "Too many login attempts from this address")
        }
    }

    func recordFailure(email: String) async throws {
        _ = try await redis.pipeline([
            ["INCR", accountKey(email)], ["PEXPIRE", accountKey(email), String(failureWindow.milliseconds), "NX"],
        ])
    }

    func recordSuccess(email: String) async throws {
        _ = try await redis.send(["DEL", accountKey(email)])
    }

    static func refusal(retryAfterMs: Int, _ message: String) -> APIError {
        let seconds = max(1, (retryAfterMs + 999) / 1000)
        var headers = HTTPFields()
        headers[.retryAfter] = String(seconds)
        return APIError(
            .tooManyRequests, "RATE_LIMITED", message + "; try again later", details: ["retryAfter": .int(seconds)], headers: headers)
    }
}
