import Foundation
import HTTPTypes
import Hummingbird
import Queue

/// Who may use the dashboard, and whether a POST is really theirs.
struct OpsAuth: Sendable {
    let credentials: OpsCredentials
    let queue: JobQueue
    let throttle: LoginThrottle

    /// The throttle's account name for the dashboard (its failures lock the dashboard, not a user).
    static let throttleAccount = "ops-dashboard"

    enum Outcome {
        case signedIn(OpsIdentity)
        case refused(Response)
    }

    /// A valid session cookie or HTTP Basic credentials; else a browser's page load goes to the sign-in form and
    /// anything else gets 401 with a Basic challenge. Wrong Basic credentials count against the login throttle.
    func authenticate(_ request: Request, context: APIContext) async throws -> Outcome {
        if let cookie = request.cookies[OpsSession.cookieName]?.value, let session = OpsSession.verify(cookie, credentials),
            try await !isRevoked(session.nonce)
        {
            return .signedIn(
                OpsIdentity(
                    user: credentials.user, sessionNonce: session.nonce,
                    csrfToken: OpsSession.csrfToken(nonce: session.nonce, credentials)))
        }
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("basic ") {
            let encoded = header.dropFirst("basic ".count).trimmingCharacters(in: .whitespaces)
            if let data = Data(base64Encoded: encoded), let pair = String(data: data, encoding: .utf8),
                let colon = pair.firstIndex(of: ":"),
                credentials.matches(user: String(pair[..<colon]), password: String(pair[pair.index(after: colon)...]))
            {
                return .signedIn(
                    OpsIdentity(user: credentials.user, sessionNonce: nil, csrfToken: OpsSession.csrfToken(nonce: nil, credentials)))
            }
            try await throttle.admit(email: Self.throttleAccount, ip: context.remoteIP)
            try await throttle.recordFailure(email: Self.throttleAccount)
            return .refused(Self.challenge())
        }
        let accept = request.headers[.accept] ?? ""
        if request.method == .get, accept.contains("text/html") {
            var target = request.uri.path
            if let query = request.uri.query, !query.isEmpty { target += "?" + query }
            let next = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "/ops/"
            return .refused(Self.redirect(to: "/ops/login?next=" + next))
        }
        return .refused(Self.challenge())
    }

    /// 401 with the Basic challenge, so `curl -u` and browsers asked directly know what to send.
    static func challenge() -> Response {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = #"Basic realm="carbscan ops", charset="UTF-8""#
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: .unauthorized, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "sign in to the dashboard\n")))
    }

    static func redirect(to location: String, cookie: String? = nil) -> Response {
        var headers = HTTPFields()
        headers[.location] = location
        headers[.cacheControl] = "no-store"
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: .seeOther, headers: headers)
    }

    /// A POST must come from a page of this server: its `Origin` (or, without one, its `Referer`) names this host when
    /// sent, and it carries the session's CSRF token (form field `csrf` or header `X-CSRF-Token`). Returns why not.
    static func postRefusal(_ request: Request, form: OpsForm, identity: OpsIdentity) -> String? {
        if let reason = originRefusal(request) { return reason }
        let sent = request.headers[HTTPField.Name("X-CSRF-Token")!] ?? form["csrf"] ?? ""
        guard !sent.isEmpty else { return "the form carries no CSRF token; reload the page and try again" }
        guard OpsCredentials.constantTimeEqual(Array(sent.utf8), Array(identity.csrfToken.utf8)) else {
            return "the form's CSRF token is wrong or from an ended session; reload the page and try again"
        }
        return nil
    }

    /// Nil when the request names no origin or names this host; else why it is refused.
    static func originRefusal(_ request: Request) -> String? {
        let claimed = request.headers[.origin] ?? request.headers[.referer]
        guard let claimed else { return nil }
        guard let host = request.head.authority, let url = URL(string: claimed), let originHost = url.host else {
            return "the request's origin \(claimed) is not this dashboard"
        }
        let origin = originHost + (url.port.map { ":\($0)" } ?? "")
        let hostOnly = host.split(separator: ":").first.map(String.init) ?? host
        guard origin == host || (url.port == nil && originHost == hostOnly) else {
            return "the request's origin is not this dashboard"
        }
        return nil
    }

    /// Behind a TLS-terminating proxy the cookie is marked `Secure` (the proxy says so in `X-Forwarded-Proto`).
    static func isHTTPS(_ request: Request) -> Bool {
        request.head.scheme == "https" || request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
    }

    func revocationKey(_ nonce: String) -> String { "\(queue.options.prefix):ops:revoked:\(nonce)" }

    private func isRevoked(_ nonce: String) async throws -> Bool {
        try await queue.redis.send(["EXISTS", revocationKey(nonce)]).int == 1
    }

    /// Ends a session everywhere: its nonce is refused until the cookie would have expired anyway.
    func revoke(_ nonce: String) async throws {
        _ = try await queue.redis.send(["SET", revocationKey(nonce), "1", "EX", String(Int(OpsSession.lifetime) + 60)])
    }
}
