import Crypto
import Durations
import Foundation
import JSON
import Synchronization

/// The APNs provider authentication token: an ES256 JWT, header `{alg: ES256, kid: key id}`, claims
/// `{iss: team id, iat: now}`, signed with the team's key.
///
/// APNs refuses a token issued more than an hour ago (403 `ExpiredProviderToken`) and one renewed more often than
/// every 20 minutes (429 `TooManyProviderTokenUpdates`), so the process keeps one token and signs a new one once the
/// current one is ``renewalAge`` old, in the middle of that window. Signing happens under the lock and never
/// suspends: concurrent pushes never sign two tokens for one renewal.
package final class ProviderToken: Sendable {
    /// 40 minutes: 20 past Apple's shortest renewal interval, 20 before its refusal.
    package static let renewalAge: Duration = .seconds(40 * 60)

    private let key: P256.Signing.PrivateKey
    private let keyID: String
    private let teamID: String
    private let clock: @Sendable () -> Date
    private let signed = Mutex<(token: String, issuedAt: Date)?>(nil)

    /// - Parameter clock: the time the token's `iat` and its age are read from (tests move it).
    package init(key: P256.Signing.PrivateKey, keyID: String, teamID: String, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.clock = clock
    }

    /// The token to send now: the cached one while younger than ``renewalAge``, else a new one. A clock set back
    /// past the token's `iat` also renews it (APNs refuses a token issued in the future).
    package func current() throws -> String {
        let now = clock()
        return try signed.withLock { signed in
            if let cached = signed, now >= cached.issuedAt, now.timeIntervalSince(cached.issuedAt) < Self.renewalAge.timeInterval {
                return cached.token
            }
            // Whole seconds: `iat` is a NumericDate, and APNs reads it as an integer.
            let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
            let token = try sign(issuedAt: issuedAt)
            signed = (token, issuedAt)
            return token
        }
    }

    private func sign(issuedAt: Date) throws -> String {
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyID)]
        let claims: JSONValue = ["iss": .string(teamID), "iat": .int(Int(issuedAt.timeIntervalSince1970))]
        let input = Self.base64URL(Array(header.jsonString.utf8)) + "." + Self.base64URL(Array(claims.jsonString.utf8))
        // JWS ES256 (RFC 7518 §3.4): the signature is r ‖ s, 64 bytes, not DER.
        let signature = try key.signature(for: Array(input.utf8)).rawRepresentation
        return input + "." + Self.base64URL(Array(signature))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
