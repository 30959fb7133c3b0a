import Accounts
import Foundation
import Settings

extension AuthSettings {
    /// `JWT_SECRET` (at least 32 bytes; required when `CARBSCAN_ENV=production`), `ACCESS_TOKEN_TTL` /
    /// `REFRESH_TOKEN_TTL` (whole seconds), `APPLE_CLIENT_ID` (comma-separated bundle/service ids), `APPLE_JWKS_URL`,
    /// `APPLE_ISSUER`, `OIDC_ISSUERS` (comma-separated `issuer` or `issuer=jwksURL`), `OIDC_AUDIENCE`,
    /// `BCRYPT_COST`, `JWKS_MIN_REFETCH_SECONDS`, `SESSION_CACHE_SECONDS` (0 turns the cache off),
    /// `REFRESH_TOKEN_ROTATION` (`true`/`false`), `REFRESH_TOKEN_REUSE_INTERVAL` (seconds).
    package init(environment: EnvironmentReader) throws(SettingError) {
        let secret: [UInt8]
        var ephemeral = false
        if let text = environment.text("JWT_SECRET") {
            secret = Array(text.utf8)
            // HS256 keys shorter than the hash (32 bytes) are weak, and JWTKit refuses them.
            guard secret.count >= 32 else { throw SettingError("JWT_SECRET", "must be at least 32 bytes (try: openssl rand -hex 64)") }
        } else if environment.text("CARBSCAN_ENV") == "production" {
            throw SettingError("JWT_SECRET", message: "FATAL: JWT_SECRET environment variable MUST be set in production")
        } else {
            var generator = SystemRandomNumberGenerator()
            secret = (0..<64).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            ephemeral = true
        }
        var apple: IdentityProvider?
        let clients = environment.list("APPLE_CLIENT_ID")
        if !clients.isEmpty {
            apple = IdentityProvider(
                name: "apple", issuer: environment.text("APPLE_ISSUER") ?? "https://appleid.apple.com",
                jwksURL: environment.text("APPLE_JWKS_URL") ?? "https://appleid.apple.com/auth/keys", audiences: clients)
        }
        let audiences = environment.list("OIDC_AUDIENCE")
        var extra: [IdentityProvider] = []
        for entry in environment.list("OIDC_ISSUERS") {
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let issuer = parts[0]
            guard issuer.hasPrefix("https://") || issuer.hasPrefix("http://") else {
                throw SettingError("OIDC_ISSUERS", "entry '\(issuer)' is not an http(s) URL")
            }
            let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
            let jwks = parts.count > 1 && !parts[1].isEmpty ? parts[1] : trimmed + "/.well-known/jwks.json"
            extra.append(IdentityProvider(name: "oidc:" + issuer, issuer: issuer, jwksURL: jwks, audiences: audiences))
        }
        self.init(jwtSecret: secret, usesEphemeralSecret: ephemeral, apple: apple, extraIssuers: extra)
        accessTokenLifetime = try environment.wholeSeconds("ACCESS_TOKEN_TTL", default: accessTokenLifetime)
        refreshTokenLifetime = try environment.wholeSeconds("REFRESH_TOKEN_TTL", default: refreshTokenLifetime)
        bcryptCost = try environment.integer("BCRYPT_COST", default: bcryptCost, in: 4...31)
        jwksMinimumRefetchInterval = try environment.seconds(
            "JWKS_MIN_REFETCH_SECONDS", default: jwksMinimumRefetchInterval, in: 0...86_400)
        sessionCacheTTL = try environment.seconds("SESSION_CACHE_SECONDS", default: sessionCacheTTL, in: 0...300)
        refreshTokenRotation = try environment.bool("REFRESH_TOKEN_ROTATION", default: refreshTokenRotation)
        refreshTokenReuseInterval = try environment.seconds(
            "REFRESH_TOKEN_REUSE_INTERVAL", default: refreshTokenReuseInterval, in: 0...3600)
    }
}
