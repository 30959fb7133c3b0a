import CryptoExtras
import Foundation
import JSON
import OutboundHTTP
import Synchronization

/// The OAuth 2.0 access token FCM's HTTP v1 API takes: a service account's RS256 JWT assertion (`iss` the account,
/// `scope` firebase.messaging, `aud` the token endpoint, an hour's `exp`) exchanged at Google's token endpoint
/// (RFC 7523), kept until five minutes before its `expires_in` runs out. One exchange at a time: pushes that need a
/// token while one is being fetched wait for it.
package final class FCMAccessToken: Sendable {
    package static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    private let settings: FCMSettings
    private let http: HTTPClient
    private let clock: @Sendable () -> Date
    private let state = Mutex<State>(State())

    private typealias Fetch = Task<(value: String, renewAt: Date), any Error>

    private struct State {
        var token: (value: String, renewAt: Date)?
        var fetching: Fetch?
    }

    private enum Next {
        case cached(String)
        case wait(Fetch)
    }

    package init(settings: FCMSettings, http: HTTPClient, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.settings = settings
        self.http = http
        self.clock = clock
    }

    /// The token to send now, fetched when there is none or it is about to expire.
    package func current() async throws -> String {
        let now = clock()
        let next = state.withLock { state -> Next in
            if let token = state.token, now < token.renewAt { return .cached(token.value) }
            if let fetching = state.fetching { return .wait(fetching) }
            let fetching = Task { try await self.fetch() }
            state.fetching = fetching
            return .wait(fetching)
        }
        let task: Fetch
        switch next {
        case .cached(let token): return token
        case .wait(let fetching): task = fetching
        }
        do {
            let token = try await task.value
            state.withLock { state in
                state.token = token
                state.fetching = nil
            }
            return token.value
        } catch {
            state.withLock { $0.fetching = nil }
            throw error
        }
    }

    /// Drops the token (FCM answered 401 to it): the next push fetches a new one.
    package func invalidate() { state.withLock { $0.token = nil } }

    private func fetch() async throws -> (value: String, renewAt: Date) {
        let issued = Date(timeIntervalSince1970: clock().timeIntervalSince1970.rounded(.down))
        let assertion = try assertion(issuedAt: issued)
        let body = "grant_type=\(Self.formEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer"))&assertion=\(assertion)"
        let response: HTTPResponse
        do {
            response = try await http.send(
                HTTPRequest(
                    method: .post, url: settings.tokenURL,
                    headers: [("content-type", "application/x-www-form-urlencoded"), ("accept", "application/json")],
                    body: Array(body.utf8), provider: "fcm-token"))
        } catch {
            throw FCMError.tokenEndpointUnreachable(error)
        }
        let answer = try? JSONValue(parsing: String(decoding: response.body.prefix(16_384), as: UTF8.self))
        guard response.status == 200 else {
            var reason = "\(response.status)"
            if case .string(let error)? = answer?["error"] { reason += " \(error)" }
            if case .string(let text)? = answer?["error_description"] { reason += ": \(text.prefix(200))" }
            throw FCMError.tokenRefused(status: response.status, reason: reason)
        }
        guard case .string(let token)? = answer?["access_token"] else {
            throw FCMError.tokenRefused(status: 200, reason: "no access_token")
        }
        var lifetime = 3600
        if case .int(let seconds)? = answer?["expires_in"] { lifetime = seconds }
        return (token, issued.addingTimeInterval(Double(max(60, lifetime - 300))))
    }

    /// The RS256 JWT of RFC 7523 §2.1 that the token endpoint exchanges.
    private func assertion(issuedAt: Date) throws -> String {
        var header: [String: JSONValue] = ["alg": "RS256", "typ": "JWT"]
        if let keyID = settings.keyID { header["kid"] = .string(keyID) }
        let iat = Int(issuedAt.timeIntervalSince1970)
        let claims: JSONValue = [
            "iss": .string(settings.clientEmail), "scope": .string(Self.scope), "aud": .string(settings.tokenURL), "iat": .int(iat),
            "exp": .int(iat + 3600),
        ]
        let input =
            ProviderToken.base64URL(Array(JSONValue.object(header).jsonString.utf8)) + "."
            + ProviderToken.base64URL(Array(claims.jsonString.utf8))
        let signature = try settings.key.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + ProviderToken.base64URL(Array(signature.rawRepresentation))
    }

    static func formEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }
}

/// Why FCM could not be asked at all.
package enum FCMError: Error, CustomStringConvertible, Sendable {
    /// The token endpoint was not reached (no connection, a timeout): try again later.
    case tokenEndpointUnreachable(HTTPClientError)
    /// The token endpoint refused the service account (`400 invalid_grant: Invalid JWT Signature.`), or answered 5xx.
    case tokenRefused(status: Int, reason: String)

    package var description: String {
        switch self {
        case .tokenEndpointUnreachable(let error): "the OAuth token endpoint is unreachable: \(error.message)"
        case .tokenRefused(_, let reason): "the OAuth token endpoint answered \(reason)"
        }
    }

    /// Worth trying again later: the endpoint was not reached, or answered 429 or 5xx.
    package var isRetryable: Bool {
        switch self {
        case .tokenEndpointUnreachable: true
        case .tokenRefused(let status, _): status == 429 || status >= 500
        }
    }
}
