import Foundation

/// A signed-in session's two tokens: the access token sent as `Authorization: Bearer`, and the refresh token that
/// gets a new one from `POST auth/refresh`.
public struct SessionTokens: Sendable, Hashable, Codable {
    public var accessToken: String
    public var refreshToken: String

    public init(accessToken: String, refreshToken: String) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }

    /// The tokens of a sign-in (`auth/register`, `auth/login`, `auth/apple`, `auth/magic-link/verify`).
    public init(_ session: Components.Schemas.AuthSession) {
        self.init(accessToken: session.accessToken, refreshToken: session.refreshToken)
    }

    /// When the access token expires, read from its `exp` claim without checking it (the server does that); nil when
    /// it is not a JWT with one.
    public var accessTokenExpiry: Date? {
        let parts = accessToken.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
            let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let exp = claims["exp"] as? NSNumber
        else { return nil }
        return Date(timeIntervalSince1970: exp.doubleValue)
    }
}

/// Where the app keeps the session's tokens between launches: in an app, the Keychain
/// (`kSecClassGenericPassword`, `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`). ``SessionMiddleware`` reads it
/// before every request and writes it after every refresh, so a refresh token the server rotated is the one kept:
/// with rotation on, the one it replaced stops working.
public protocol TokenStore: Sendable {
    /// The stored tokens; nil when signed out.
    func load() async throws -> SessionTokens?
    /// Replaces the stored tokens (after a sign-in, and after every refresh).
    func save(_ tokens: SessionTokens) async throws
    /// Forgets the tokens (signed out, or the server refused the refresh token: sign in again).
    func clear() async throws
}

/// Tokens kept in memory only: for tests, previews and an app that signs in at every launch.
public actor InMemoryTokenStore: TokenStore {
    private var tokens: SessionTokens?

    public init(_ tokens: SessionTokens? = nil) {
        self.tokens = tokens
    }

    public func load() -> SessionTokens? { tokens }
    public func save(_ tokens: SessionTokens) { self.tokens = tokens }
    public func clear() { tokens = nil }
}
