import Crypto
import Durations
import Foundation
import Logging
import Postgres
import Store

/// A signed-in session: an access token and the refresh token that renews it.
package struct Session: Sendable {
    package var accessToken: String
    package var refreshToken: String
    package var sessionID: UUID
    package var user: User
}

/// Who made a sign-in or sign-out, for login events and the login webhook.
package struct SignInEvent: Sendable, Equatable {
    package var userID: String
    package var provider: String
    package var subject: String
    package var email: String?
    package var displayName: String?

    package init(userID: String, provider: String, subject: String, email: String?, displayName: String?) {
        self.userID = userID
        self.provider = provider
        self.subject = subject
        self.email = email
        self.displayName = displayName
    }
}

/// Names the client sends along (Apple sends them with the first sign-in only).
package struct ProvidedName: Sendable, Equatable {
    package var email: String?
    package var firstName: String?
    package var lastName: String?

    package init(email: String? = nil, firstName: String? = nil, lastName: String? = nil) {
        self.email = email
        self.firstName = firstName
        self.lastName = lastName
    }
}

/// Accounts: sign-in with Apple, email and password, magic links, extra OIDC issuers; sessions whose refresh tokens
/// rotate when `REFRESH_TOKEN_ROTATION` is on (`AccountService+Refresh`).
package struct AccountService: Sendable {
    package let database: PostgresClient
    package let settings: AuthSettings
    package let accessTokens: AccessTokens
    package let apple: IdentityVerifier?
    package let extraIssuers: [IdentityVerifier]
    /// Recently verified access tokens (see `SessionCache`); the API wires its revocation messages to Redis.
    package let sessions: SessionCache
    let hasher: PasswordHasher
    let logger: Logger
    /// The time of refresh-token expiries and reuse intervals (tests move it days ahead).
    let now: @Sendable () -> Date

    package init(
        database: PostgresClient, settings: AuthSettings, accessTokens: AccessTokens, apple: IdentityVerifier?,
        extraIssuers: [IdentityVerifier], logger: Logger, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database
        self.settings = settings
        self.accessTokens = accessTokens
        self.apple = apple
        self.extraIssuers = extraIssuers
        self.sessions = SessionCache(ttl: settings.sessionCacheTTL)
        self.hasher = PasswordHasher(cost: settings.bcryptCost)
        self.logger = logger
        self.now = now
    }

    // MARK: Sign in with Apple and other OIDC issuers

    package func signInWithApple(identityToken: String, name: ProvidedName, deviceID: String?) async throws -> (Session, SignInEvent) {
        guard let apple else { throw AccountError.appleNotConfigured }
        let identity: VerifiedIdentity
        do {
            identity = try await apple.verify(identityToken)
        } catch {
            throw AccountError.invalidIdentityToken(error)
        }
        let user = try await user(for: identity, name: name, newUserID: identity.subject)
        let session = try await startSession(user: user, deviceID: deviceID)
        let displayName = [user.firstName, user.lastName].compactMap { $0 }.joined(separator: " ")
        return (
            session,
            SignInEvent(
                userID: user.id, provider: "apple", subject: identity.subject, email: user.email,
                displayName: displayName.isEmpty ? nil : displayName)
        )
    }

    /// Verifies a bearer token from one of the extra OIDC issuers (e.g. Clerk); nil when it names no such issuer.
    package func verifyExternal(_ token: String) async throws(AccountError) -> VerifiedIdentity? {
        // Every authenticated request comes here first: with no extra issuer configured, skip decoding the payload.
        guard !extraIssuers.isEmpty, let issuer = try? PeekedIssuer(token: token).iss,
            let verifier = extraIssuers.first(where: { $0.provider.issuer == issuer })
        else { return nil }
        do {
            return try await verifier.verify(token)
        } catch {
            throw .invalidIdentityToken(error)
        }
    }

    /// The user an extra issuer's token stands for; nil when that identity has no account yet.
    package func linkedUser(for identity: VerifiedIdentity) async throws -> User? {
        try await Users(database).find(provider: identity.provider, subject: identity.subject)
    }

    /// Finds the account of an identity, else links it to the account with the same email when the identity's email
    /// is verified, else creates one. Apple's name and email fill only empty fields: Apple sends them on the first
    /// sign-in only.
    ///
    /// Linking to an account whose own email was never proven (a password sign-up) is how accounts are pre-hijacked:
    /// someone registers the victim's address with a password and waits for the victim to sign in with Apple. Such an
    /// account is taken over cleanly instead (`takeOver`): its password and other identities go, its sessions are
    /// revoked, and it then belongs to whoever proved the email.
    package func user(for identity: VerifiedIdentity, name: ProvidedName, newUserID: String? = nil) async throws -> User {
        // Two first sign-ins at once: the loser of the unique race finds the winner's rows on its second pass.
        for attempt in 1...2 {
            do {
                let (user, revoked) = try await database.transaction { tx -> (User, [UUID]) in
                    let users = Users(tx)
                    let email = identity.email ?? name.email
                    let emailVerified = identity.email != nil && identity.emailVerified
                    if let user = try await users.find(provider: identity.provider, subject: identity.subject) {
                        try await users.touchIdentity(provider: identity.provider, subject: identity.subject)
                        try await users.fillMissing(
                            id: user.id, email: email, emailVerified: emailVerified, firstName: name.firstName, lastName: name.lastName)
                        return (try await users.find(id: user.id) ?? user, [])
                    }
                    if emailVerified, let email, let existing = try await users.find(email: email) {
                        let revoked = existing.emailVerified ? [] : try await takeOver(existing, on: tx)
                        try await users.link(userID: existing.id, provider: identity.provider, subject: identity.subject, email: email)
                        try await users.fillMissing(
                            id: existing.id, email: nil, emailVerified: false, firstName: name.firstName, lastName: name.lastName)
                        return (try await users.find(id: existing.id) ?? existing, revoked)
                    }
                    // An unverified email that another account holds is not attached to this new account.
                    let unclaimedEmail: String? = if let email, try await users.find(email: email) == nil { email } else { nil }
                    let user = try await users.create(
                        id: newUserID ?? UUID().uuidString.lowercased(), email: unclaimedEmail, emailVerified: emailVerified,
                        firstName: name.firstName, lastName: name.lastName)
                    try await users.link(userID: user.id, provider: identity.provider, subject: identity.subject, email: email)
                    return (user, [])
                }
                await sessionsEnded(revoked)
                return user
            } catch let error as PostgresError where error.isUniqueViolation && attempt == 1 {
                continue
            }
        }
        throw AccountError.invalidIdentityToken(TokenError(.invalid, "the account could not be created"))
    }

    /// The email of `user` was just proven by someone who controls it (a verified identity, a magic link) while the
    /// account never proved it: whoever created it may not own the address. The account becomes the prover's alone:
    /// the password and every other identity are removed and every session revoked (call `sessionsEnded` with the
    /// returned families after the commit). Its data stays: an honest owner who signed up with a password keeps it.
    func takeOver(_ user: User, on tx: any PostgresQueryable) async throws -> [UUID] {
        try await Users(tx).takeOver(id: user.id)
        let revoked = try await RefreshTokens(tx).revokeAll(userID: user.id, reason: "email-proven")
        logger.notice("unverified account taken over by its email's owner", metadata: ["user": "\(user.id)"])
        return revoked
    }

    /// Tells this and the other API processes that these sign-ins ended.
    func sessionsEnded(_ families: [UUID]) async {
        for family in families { await sessions.revoked(session: family) }
    }

    // MARK: Email and password

    package func register(email rawEmail: String, password: String, firstName: String?, lastName: String?, deviceID: String?) async throws
        -> (Session, SignInEvent)
    {
        let email = try Self.normalizedEmail(rawEmail)
        try Self.checkPassword(password)
        let hash = try await hasher.hash(password)
        let user: User
        do {
            user = try await database.transaction { tx in
                let users = Users(tx)
                let user = try await users.create(
                    id: UUID().uuidString.lowercased(), email: email, emailVerified: false, firstName: firstName,
                    lastName: lastName, passwordHash: hash)
                try await users.link(userID: user.id, provider: "password", subject: email, email: email)
                return user
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw AccountError.emailTaken
        }
        let session = try await startSession(user: user, deviceID: deviceID)
        return (session, event(for: user, provider: "email", subject: email))
    }

    package func login(email rawEmail: String, password: String, deviceID: String?) async throws -> (Session, SignInEvent) {
        guard let email = try? Self.normalizedEmail(rawEmail), password.utf8.count <= PasswordHasher.maxPasswordBytes else {
            await hasher.burnVerification()
            throw AccountError.invalidCredentials
        }
        let users = Users(database)
        guard let user = try await users.find(provider: "password", subject: email),
            let hash = try await users.passwordHash(userID: user.id)
        else {
            await hasher.burnVerification()
            throw AccountError.invalidCredentials
        }
        guard await hasher.verify(password, against: hash) else { throw AccountError.invalidCredentials }
        try await users.touchIdentity(provider: "password", subject: email)
        let session = try await startSession(user: user, deviceID: deviceID)
        return (session, event(for: user, provider: "email", subject: email))
    }

    static func normalizedEmail(_ text: String) throws(AccountError) -> String {
        let email = text.trimmingCharacters(in: .whitespaces).lowercased()
        // One '@', a non-empty local part, a dotted domain, no spaces: what a mail server can route.
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64,
            parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."), !parts[1].contains(".."),
            !email.contains(where: { $0.isWhitespace || $0 == "," || $0 == ";" || $0 == "<" || $0 == ">" })
        else { throw .invalidInput(field: "email", message: "email must be a valid email address") }
        return email
    }

    static func checkPassword(_ password: String) throws(AccountError) {
        guard password.count >= 8 else {
            throw .invalidInput(field: "password", message: "password must be at least 8 characters")
        }
        guard password.utf8.count <= PasswordHasher.maxPasswordBytes else {
            throw .invalidInput(field: "password", message: "password must be at most \(PasswordHasher.maxPasswordBytes) bytes")
        }
    }

    func event(for user: User, provider: String, subject: String) -> SignInEvent {
        let name = [user.firstName, user.lastName].compactMap { $0 }.joined(separator: " ")
        return SignInEvent(userID: user.id, provider: provider, subject: subject, email: user.email, displayName: name.isEmpty ? nil : name)
    }

    // MARK: Sessions

    /// A new sign-in: a new refresh-token family.
    func startSession(user: User, deviceID: String?) async throws -> Session {
        let family = UUID()
        let refresh = try await issueRefreshToken(userID: user.id, family: family, deviceID: deviceID, on: database)
        let access = try await accessTokens.issue(userID: user.id, sessionID: family, email: user.email)
        return Session(accessToken: access, refreshToken: refresh, sessionID: family, user: user)
    }

    /// Stores a refresh token of `family` (a new random one unless `token` is given) and returns it.
    func issueRefreshToken(
        userID: String, family: UUID, deviceID: String?, token: String = randomToken(prefix: "rt_"), on db: any PostgresQueryable
    ) async throws -> String {
        try await RefreshTokens(db).insert(
            userID: userID, tokenHash: Self.hash(token), familyID: family, deviceID: deviceID,
            expiresAt: now().addingTimeInterval(settings.refreshTokenLifetime.timeInterval))
        return token
    }

    static func hash(_ token: String) -> [UInt8] { Array(SHA256.hash(data: Array(token.utf8))) }

    /// 32 bytes of kernel randomness, base64url, after `prefix` (which says what the token is for).
    static func randomToken(prefix: String) -> String {
        prefix + base64URL(randomBytes(32))
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    static func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Revokes the sign-in a refresh token belongs to. Returns its user, or nil for an unknown token.
    @discardableResult
    package func revoke(refreshToken: String) async throws -> String? {
        guard let record = try await RefreshTokens(database).find(tokenHash: Self.hash(refreshToken)) else { return nil }
        try await RefreshTokens(database).revokeFamily(record.familyID, reason: "logout")
        await sessions.revoked(session: record.familyID)
        return record.userID
    }

    /// Revokes a sign-in by its id (the `sid` of an access token).
    package func revoke(sessionID: UUID) async throws {
        try await RefreshTokens(database).revokeFamily(sessionID, reason: "logout")
        await sessions.revoked(session: sessionID)
    }

    // MARK: The account

    /// Who an access token stands for: from the session cache when this process verified it moments ago, else
    /// checked in full (`authenticate`).
    package func principal(accessToken: String) async throws -> (userID: String, sessionID: UUID) {
        if let cached = sessions.lookup(accessToken) { return cached }
        let (user, session) = try await verify(accessToken: accessToken)
        return (user.id, session)
    }

    /// A route read the account in its own statement and found it gone or the sign-in revoked: the session cache
    /// stops vouching for that sign-in before the revocation's message arrives.
    package func sessionEnded(_ session: UUID) {
        sessions.forget(session: session)
    }

    /// The account of an access token, read from the database with the check that its sign-in is still live. A
    /// token the session cache vouches for skips the signature and claims; any other is checked in full.
    package func authenticate(accessToken: String) async throws -> (User, sessionID: UUID) {
        if let (userID, session) = sessions.lookup(accessToken) {
            // The same one query as a full check, so a sign-out is seen here even before its message arrives.
            guard let user = try await Users(database).find(id: userID, liveSession: session) else {
                sessions.forget(session: session)
                throw AccountError.invalidIdentityToken(TokenError(.invalid, "session was signed out"))
            }
            return (user, session)
        }
        return try await verify(accessToken: accessToken)
    }

    /// The full check, remembered in the session cache when it passes: signature and claims, then that the
    /// sign-in is still live and its user still exists, in one query.
    private func verify(accessToken: String) async throws -> (User, sessionID: UUID) {
        let generation = sessions.generation
        let claims: AccessClaims
        do {
            claims = try await accessTokens.verify(accessToken)
        } catch {
            throw AccountError.invalidIdentityToken(error)
        }
        let session = UUID(uuidString: claims.sid)!
        guard let user = try await Users(database).find(id: claims.sub.value, liveSession: session) else {
            throw AccountError.invalidIdentityToken(TokenError(.invalid, "session was signed out"))
        }
        sessions.store(accessToken, userID: user.id, session: session, tokenExpiry: claims.exp.value, generation: generation)
        return (user, session)
    }

    /// Erases the account and every row that belongs to it.
    package func deleteAccount(userID: String) async throws {
        try await database.transaction { tx in
            guard try await Users(tx).delete(id: userID) else { throw AccountError.userNotFound }
        }
        await sessions.removed(userID: userID)
    }
}
