import Foundation

/// A signed-in operator: by a session cookie from the login form, or by HTTP Basic on each request. Either way
/// every POST must carry ``csrfToken`` (a form field `csrf` or the `X-CSRF-Token` header).
struct OpsIdentity: Sendable {
    var user: String
    /// The session's nonce; nil for HTTP Basic.
    var sessionNonce: String?
    var csrfToken: String
}

/// Dashboard sessions, stateless so any `carbscan serve` process accepts them: the cookie is
/// `<expiry seconds>.<nonce>.<HMAC>` signed with the credentials' key, and the session's CSRF token is an HMAC of its
/// nonce. Sign-out records the nonce as revoked in Redis until the cookie would have expired.
enum OpsSession {
    static let cookieName = "carbscan_ops"
    static let lifetime: TimeInterval = 12 * 3600

    static func issue(_ credentials: OpsCredentials, now: Date = Date()) -> (cookie: String, nonce: String) {
        let expiry = Int(now.timeIntervalSince1970 + lifetime)
        let nonce = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let body = "\(expiry).\(nonce)"
        return (body + "." + credentials.sign("session|" + body), nonce)
    }

    /// The session's nonce and expiry when the cookie is well formed, signed by these credentials and not expired.
    static func verify(_ cookie: String, _ credentials: OpsCredentials, now: Date = Date()) -> (nonce: String, expiry: Int)? {
        let parts = cookie.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let expiry = Int(parts[0]), parts[1].count == 32 else { return nil }
        let expected = credentials.sign("session|\(parts[0]).\(parts[1])")
        guard OpsCredentials.constantTimeEqual(Array(expected.utf8), Array(parts[2].utf8)) else { return nil }
        guard Double(expiry) > now.timeIntervalSince1970 else { return nil }
        return (parts[1], expiry)
    }

    static func csrfToken(nonce: String?, _ credentials: OpsCredentials) -> String {
        credentials.sign("csrf|" + (nonce ?? "basic"))
    }

    /// `Set-Cookie` for a new session: HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
    /// it), scoped to `/ops`, and `Secure` when the request came over https (as a proxy reports it).
    static func setCookie(_ value: String, secure: Bool) -> String {
        "\(cookieName)=\(value); Path=/ops; Max-Age=\(Int(lifetime)); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    static func clearCookie(secure: Bool) -> String {
        "\(cookieName)=; Path=/ops; Max-Age=0; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }
}
