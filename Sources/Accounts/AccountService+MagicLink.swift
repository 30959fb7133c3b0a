import Foundation
import Store

extension AccountService {
    /// How long a sign-in link works.
    package static let magicLinkLifetime: TimeInterval = 15 * 60

    /// A new sign-in link token for the account that has this email, stored only as its SHA-256; nil when no account
    /// has it (the caller answers the same either way, so the answer never tells whether an email is registered).
    /// - Throws: `AccountError.invalidInput` for an address a mail server could not route.
    package func magicLinkToken(email rawEmail: String) async throws -> (token: String, user: User)? {
        let email = try Self.normalizedEmail(rawEmail)
        guard let user = try await Users(database).find(email: email) else { return nil }
        let token = Self.randomToken(prefix: "ml_")
        try await MagicLinks(database).insert(
            tokenHash: Self.hash(token), userID: user.id, expiresAt: Date().addingTimeInterval(Self.magicLinkLifetime))
        return (token, user)
    }

    /// Signs in with a link's token, once: the same session as every other sign-in. The link proves the email: an
    /// account that had not proven it is taken over (`takeOver`: a pre-hijacker's password stops working) and from
    /// then on is one a verified identity with that email links to.
    /// - Throws: `AccountError.invalidMagicLink` for a token that is unknown, expired or used.
    package func signInWithMagicLink(token: String, deviceID: String?) async throws -> (Session, SignInEvent) {
        guard token.utf8.count <= 256, let userID = try await MagicLinks(database).consume(tokenHash: Self.hash(token)),
            var user = try await Users(database).find(id: userID)
        else { throw AccountError.invalidMagicLink }
        if !user.emailVerified {
            let found = user
            let (proven, revoked) = try await database.transaction { tx -> (User, [UUID]) in
                let revoked = try await takeOver(found, on: tx)
                return (try await Users(tx).find(id: found.id) ?? found, revoked)
            }
            await sessionsEnded(revoked)
            user = proven
        }
        let session = try await startSession(user: user, deviceID: deviceID)
        return (session, event(for: user, provider: "email", subject: user.email ?? user.id))
    }
}
