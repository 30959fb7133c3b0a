import Foundation

/// Authentication settings, read from the environment.
package struct AuthConfiguration: Sendable {
    package var jwtSecret: [UInt8]
    /// True when `JWT_SECRET` was unset outside production: a random secret, so tokens die with the process.
    package var usesEphemeralSecret: Bool
    package var accessTokenLifetime: Duration
    package var refreshTokenLifetime: Duration
    /// Sign in with Apple; nil when `APPLE_CLIENT_ID` is unset (the route then answers CONFIGURATION_ERROR).
    package var apple: IdentityProvider?
    /// Extra OIDC issuers (e.g. Clerk) whose tokens are accepted as bearer tokens.
    package var extraIssuers: [IdentityProvider]
    package var bcryptCost: Int
    /// A token with an unknown key id refetches the issuer's JWKS at most this often.
    package var jwksMinimumRefetchInterval: Duration = .seconds(10)
    /// How long a verified access token is trusted without asking the database again (`SessionCache`); zero
    /// checks every request.
    package var sessionCacheTTL: Duration = .seconds(5)
    /// Off (seed 001's contract): a sign-in's refresh token keeps working until it expires or is revoked. On, each
    /// refresh returns a new refresh token and the presented one is used up (RFC 9700 §4.14).
    package var refreshTokenRotation = false
    /// With rotation on: how long a just-rotated token still answers (with the same successor) instead of being taken
    /// as stolen, so a retried or concurrent refresh does not sign the user out (Supabase Auth's reuse interval).
    package var refreshTokenReuseInterval: Duration = .seconds(10)

    package init(
        jwtSecret: [UInt8], usesEphemeralSecret: Bool = false, accessTokenLifetime: Duration = .seconds(30 * 86_400),
        refreshTokenLifetime: Duration = .seconds(90 * 86_400), apple: IdentityProvider? = nil,
        extraIssuers: [IdentityProvider] = [], bcryptCost: Int = 10
    ) {
        self.jwtSecret = jwtSecret
        self.usesEphemeralSecret = usesEphemeralSecret
        self.accessTokenLifetime = accessTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.apple = apple
        self.extraIssuers = extraIssuers
        self.bcryptCost = bcryptCost
    }

    /// `JWT_SECRET` (at least 32 bytes; required when `CARBSCAN_ENV=production`), `ACCESS_TOKEN_TTL` /
    /// `REFRESH_TOKEN_TTL` (seconds), `APPLE_CLIENT_ID` (comma-separated bundle/service ids), `APPLE_JWKS_URL`,
    /// `APPLE_ISSUER`, `OIDC_ISSUERS` (comma-separated `issuer` or `issuer=jwksURL`), `OIDC_AUDIENCE`,
    /// `BCRYPT_COST`, `JWKS_MIN_REFETCH_SECONDS`, `SESSION_CACHE_SECONDS` (0 turns the cache off),
    /// `REFRESH_TOKEN_ROTATION` (`true`/`false`), `REFRESH_TOKEN_REUSE_INTERVAL` (seconds).
    package static func fromEnvironment(_ environment: [String: String]) throws(AuthConfigurationError) -> AuthConfiguration {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        func seconds(_ name: String, default fallback: Int) throws(AuthConfigurationError) -> Duration {
            guard let text = value(name) else { return .seconds(fallback) }
            guard let number = Int(text), number > 0 else {
                throw AuthConfigurationError("\(name) must be a positive number of seconds, not '\(text)'")
            }
            return .seconds(number)
        }
        let production = value("CARBSCAN_ENV") == "production"
        var secret: [UInt8]
        var ephemeral = false
        if let text = value("JWT_SECRET") {
            secret = Array(text.utf8)
            // HS256 keys shorter than the hash (32 bytes) are weak, and JWTKit refuses them.
            if secret.count < 32 {
                throw AuthConfigurationError("JWT_SECRET must be at least 32 bytes (try: openssl rand -hex 64)")
            }
        } else if production {
            throw AuthConfigurationError("FATAL: JWT_SECRET environment variable MUST be set in production")
        } else {
            var generator = SystemRandomNumberGenerator()
            secret = (0..<64).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            ephemeral = true
        }
        var apple: IdentityProvider?
        if let clients = value("APPLE_CLIENT_ID") {
            let issuer = value("APPLE_ISSUER") ?? "https://appleid.apple.com"
            apple = IdentityProvider(
                name: "apple", issuer: issuer, jwksURL: value("APPLE_JWKS_URL") ?? "https://appleid.apple.com/auth/keys",
                audiences: clients.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        let audiences = value("OIDC_AUDIENCE").map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
        var extra: [IdentityProvider] = []
        for entry in (value("OIDC_ISSUERS") ?? "").split(separator: ",") {
            let parts = entry.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let issuer = parts[0]
            guard issuer.hasPrefix("https://") || issuer.hasPrefix("http://") else {
                throw AuthConfigurationError("OIDC_ISSUERS entry '\(issuer)' is not an http(s) URL")
            }
            let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
            let jwks = parts.count > 1 ? parts[1] : trimmed + "/.well-known/jwks.json"
            extra.append(IdentityProvider(name: "oidc:" + issuer, issuer: issuer, jwksURL: jwks, audiences: audiences))
        }
        let cost = Int(value("BCRYPT_COST") ?? "10") ?? -1
        guard (4...31).contains(cost) else { throw AuthConfigurationError("BCRYPT_COST must be 4–31") }
        var configuration = AuthConfiguration(
            jwtSecret: secret, usesEphemeralSecret: ephemeral,
            accessTokenLifetime: try seconds("ACCESS_TOKEN_TTL", default: 30 * 86_400),
            refreshTokenLifetime: try seconds("REFRESH_TOKEN_TTL", default: 90 * 86_400),
            apple: apple, extraIssuers: extra, bcryptCost: cost)
        if let text = value("JWKS_MIN_REFETCH_SECONDS") {
            guard let seconds = Double(text), (0...86_400).contains(seconds) else {
                throw AuthConfigurationError("JWKS_MIN_REFETCH_SECONDS must be a number of seconds from 0 to 86400")
            }
            configuration.jwksMinimumRefetchInterval = .milliseconds(Int(seconds * 1000))
        }
        if let text = value("SESSION_CACHE_SECONDS") {
            guard let seconds = Double(text), (0...300).contains(seconds) else {
                throw AuthConfigurationError("SESSION_CACHE_SECONDS must be a number of seconds from 0 to 300")
            }
            configuration.sessionCacheTTL = .milliseconds(Int(seconds * 1000))
        }
        if let text = value("REFRESH_TOKEN_ROTATION") {
            switch text.lowercased() {
            case "true", "1", "yes", "on": configuration.refreshTokenRotation = true
            case "false", "0", "no", "off": configuration.refreshTokenRotation = false
            default: throw AuthConfigurationError("REFRESH_TOKEN_ROTATION must be true or false, not '\(text)'")
            }
        }
        if let text = value("REFRESH_TOKEN_REUSE_INTERVAL") {
            guard let seconds = Double(text), (0...3600).contains(seconds) else {
                throw AuthConfigurationError("REFRESH_TOKEN_REUSE_INTERVAL must be a number of seconds from 0 to 3600")
            }
            configuration.refreshTokenReuseInterval = .milliseconds(Int(seconds * 1000))
        }
        return configuration
    }
}

package struct AuthConfigurationError: Error, CustomStringConvertible, Sendable {
    package let description: String
    init(_ description: String) { self.description = description }
}
