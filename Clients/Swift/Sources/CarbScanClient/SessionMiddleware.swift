import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession

/// Keeps a signed-in session's requests authorised: sends the stored access token, refreshes it with
/// `POST auth/refresh` before it expires or when the server answers 401 `TOKEN_EXPIRED` (then sends the request
/// once more), and stores what the refresh returned, the access token and the refresh token, so that a rotated
/// refresh token replaces the used one in the app's ``TokenStore``.
///
/// Refreshes are one at a time: requests that find the token expired together wait for the same refresh, since
/// with rotation on a refresh token presented twice (after the server's short reuse interval) signs the user out.
/// When the server refuses the refresh token (401 `INVALID_REFRESH_TOKEN`), the store is cleared and the request's
/// own 401 is returned: the app signs in again.
public struct SessionMiddleware: ClientMiddleware {
    /// Where the tokens live.
    public let store: any TokenStore
    private let refresher: Refresher

    /// - Parameters:
    ///   - store: the app's token store; save the tokens of a sign-in into it (``SessionTokens/init(_:)``).
    ///   - serverURL: the API's server, as given to the client.
    ///   - transport: the client's transport (URLSession unless told otherwise); refreshes are sent through it
    ///     without this middleware.
    ///   - refreshAhead: how long before the access token's expiry it is refreshed (0: only on `TOKEN_EXPIRED`).
    public init(
        store: any TokenStore, serverURL: URL, transport: any ClientTransport = URLSessionTransport(),
        refreshAhead: Duration = .seconds(60)
    ) {
        self.store = store
        self.refresher = Refresher(
            store: store, client: Client(serverURL: serverURL, configuration: .carbScan, transport: transport), refreshAhead: refreshAhead)
    }

    /// Refreshes the session now and returns the stored tokens. Throws ``SessionExpiredError`` (the store is then
    /// empty) when there is no session or the server refused its refresh token.
    @discardableResult
    public func refresh() async throws -> SessionTokens {
        try await refresher.refresh(replacing: nil)
    }

    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard operationID != "refreshToken", var tokens = try await store.load() else {
            return try await next(request, body, baseURL)
        }
        if await refresher.isDue(tokens), let fresh = try? await refresher.refresh(replacing: tokens.accessToken) {
            tokens = fresh
        }
        var authorised = request
        authorised.headerFields[.authorization] = "Bearer \(tokens.accessToken)"
        let (response, responseBody) = try await next(authorised, body, baseURL)
        guard response.status == .unauthorized else { return (response, responseBody) }

        // Only TOKEN_EXPIRED is cured by a refresh (UNAUTHORIZED is a revoked or foreign token): read the code, and
        // hand the body on unchanged otherwise.
        var bytes: Data?
        if let responseBody { bytes = try await Data(collecting: responseBody, upTo: 64 * 1024) }
        let original = (response, bytes.map { HTTPBody($0) })
        guard let bytes, Self.errorCode(bytes) == "TOKEN_EXPIRED" else { return original }
        guard let fresh = try? await refresher.refresh(replacing: tokens.accessToken) else { return original }
        // A body that can be sent only once (a stream) is not sent again: the caller retries it with the new token.
        guard body == nil || body?.iterationBehavior == .multiple else { return original }
        authorised.headerFields[.authorization] = "Bearer \(fresh.accessToken)"
        return try await next(authorised, body, baseURL)
    }

    private static func errorCode(_ body: Data) -> String? {
        struct Failure: Decodable {
            struct Body: Decodable { var code: String }
            var error: Body
        }
        return try? JSONDecoder().decode(Failure.self, from: body).error.code
    }
}

/// There is no session to refresh, or the server refused its refresh token: sign in again.
public struct SessionExpiredError: Error, CustomStringConvertible, Sendable {
    /// The server's error code (`INVALID_REFRESH_TOKEN`), nil when nothing was stored.
    public let code: String?
    public var description: String { "the session has expired (\(code ?? "no tokens stored")): sign in again" }
}

/// Runs one refresh at a time and stores its outcome.
private actor Refresher {
    let store: any TokenStore
    let client: Client
    let refreshAhead: Duration
    private var running: Task<SessionTokens, any Error>?

    init(store: any TokenStore, client: Client, refreshAhead: Duration) {
        self.store = store
        self.client = client
        self.refreshAhead = refreshAhead
    }

    func isDue(_ tokens: SessionTokens) -> Bool {
        guard refreshAhead > .zero, let expiry = tokens.accessTokenExpiry else { return false }
        return expiry.timeIntervalSinceNow < Double(refreshAhead.components.seconds)
    }

    /// Refreshes, or joins the refresh under way. `stale`: the access token the caller found wanting; when the store
    /// already holds another, a refresh since has replaced it and that is returned as it is.
    func refresh(replacing stale: String?) async throws -> SessionTokens {
        if let running { return try await running.value }
        let task = Task { try await self.perform(replacing: stale) }
        running = task
        let result = await task.result
        if running == task { running = nil }
        return try result.get()
    }

    private func perform(replacing stale: String?) async throws -> SessionTokens {
        guard let current = try await store.load() else { throw SessionExpiredError(code: nil) }
        if let stale, current.accessToken != stale { return current }
        let output = try await client.refreshToken(body: .json(.init(refreshToken: current.refreshToken)))
        switch output {
        case .ok(let ok):
            let pair = try ok.body.json.value2.data
            // Without rotation the same refresh token comes back; with it, a new one that alone works from now on.
            let fresh = SessionTokens(accessToken: pair.accessToken, refreshToken: pair.refreshToken)
            try await store.save(fresh)
            return fresh
        case .unauthorized(let refused):
            try await store.clear()
            throw SessionExpiredError(code: (try? refused.body.json.error.code).map(\.rawValue))
        default:
            throw UnexpectedAnswerError(operation: "POST auth/refresh", status: Client.status(output))
        }
    }
}
