/// Authentication settings: `JWT_SECRET`, `ACCESS_TOKEN_TTL`, `REFRESH_TOKEN_TTL`, `APPLE_*`, `OIDC_*`, `BCRYPT_COST`,
/// `JWKS_MIN_REFETCH_SECONDS`, `SESSION_CACHE_SECONDS`, `REFRESH_TOKEN_ROTATION`, `REFRESH_TOKEN_REUSE_INTERVAL` (the
/// executable reads them).
package struct AuthSettings: Sendable {
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
}
