import Crypto
import Foundation
import Store

extension AccountService {
    /// Renews a sign-in's access token.
    ///
    /// Rotation off (the default, seed 001's contract: the app stores its refresh token once, at sign-in): the token
    /// keeps working until it expires or is revoked, and comes back unchanged.
    ///
    /// Rotation on (`REFRESH_TOKEN_ROTATION`): the token is used up and its successor returned. Presenting a used-up
    /// token again within `refreshTokenReuseInterval` of its rotation returns the same successor (a retry whose answer
    /// was lost, two refreshes at once); past it, the reuse is taken as theft and the whole family (every token of
    /// that sign-in, and its access tokens) is revoked.
    package func refresh(_ refreshToken: String) async throws -> Session {
        let tokens = RefreshTokens(database)
        guard let record = try await tokens.find(tokenHash: Self.hash(refreshToken)) else {
            throw AccountError.invalidRefreshToken(reason: "unknown token")
        }
        let time = now()
        try check(record, at: time)
        if record.replacedAt != nil {
            return try await reuse(refreshToken, record, at: time)
        }
        guard settings.refreshTokenRotation else {
            return try await session(userID: record.userID, family: record.familyID, refreshToken: refreshToken)
        }
        let salt = Self.randomBytes(32)
        let successor = Self.successor(of: refreshToken, salt: salt)
        let rotated: Session? = try await database.transaction { tx in
            // Of several refreshes at once, one marks the token replaced; the others wait for its commit and then
            // take the reuse path below, which finds the same successor.
            guard try await RefreshTokens(tx).markReplaced(id: record.id, at: time, successorSalt: salt) else { return nil }
            guard let user = try await Users(tx).find(id: record.userID) else { throw AccountError.userNotFound }
            _ = try await issueRefreshToken(
                userID: user.id, family: record.familyID, deviceID: record.deviceID, token: successor, on: tx)
            let access = try await accessTokens.issue(userID: user.id, sessionID: record.familyID, email: user.email)
            return Session(accessToken: access, refreshToken: successor, sessionID: record.familyID, user: user)
        }
        if let rotated { return rotated }
        guard let replaced = try await tokens.find(tokenHash: Self.hash(refreshToken)) else {
            throw AccountError.invalidRefreshToken(reason: "unknown token")
        }
        try check(replaced, at: time)
        return try await reuse(refreshToken, replaced, at: time)
    }

    /// A token that was rotated is presented again: within the reuse interval its live successor (following the
    /// chain, should that have rotated too) answers; otherwise the family is revoked.
    private func reuse(_ token: String, _ record: RefreshTokenRecord, at time: Date) async throws -> Session {
        var token = token
        var record = record
        // A chain of rotations inside one reuse interval is short; the bound only stops a loop on corrupt rows.
        for _ in 0..<16 {
            guard let replacedAt = record.replacedAt, let salt = record.rotationSalt,
                time.timeIntervalSince(replacedAt) < settings.refreshTokenReuseInterval.timeInterval
            else { break }
            let successor = Self.successor(of: token, salt: salt)
            guard let next = try await RefreshTokens(database).find(tokenHash: Self.hash(successor)), next.familyID == record.familyID
            else { break }
            try check(next, at: time)
            if next.replacedAt == nil {
                return try await session(userID: next.userID, family: next.familyID, refreshToken: successor)
            }
            (token, record) = (successor, next)
        }
        try await RefreshTokens(database).revokeFamily(record.familyID, reason: "reuse")
        await sessions.revoked(session: record.familyID)
        logger.warning("refresh token reused: family revoked", metadata: ["user": "\(record.userID)"])
        throw AccountError.invalidRefreshToken(reason: "it was already used")
    }

    private func check(_ record: RefreshTokenRecord, at time: Date) throws(AccountError) {
        if record.revokedAt != nil { throw .invalidRefreshToken(reason: "it was revoked") }
        guard record.expiresAt > time else { throw .invalidRefreshToken(reason: "it expired") }
    }

    /// A new access token for a live sign-in, beside `refreshToken` (which the caller keeps).
    private func session(userID: String, family: UUID, refreshToken: String) async throws -> Session {
        guard let user = try await Users(database).find(id: userID, liveSession: family) else {
            if try await RefreshTokens(database).isFamilyRevoked(family) {
                throw AccountError.invalidRefreshToken(reason: "it was revoked")
            }
            throw AccountError.userNotFound
        }
        let access = try await accessTokens.issue(userID: user.id, sessionID: family, email: user.email)
        return Session(accessToken: access, refreshToken: refreshToken, sessionID: family, user: user)
    }

    /// The token that replaces `token` at a rotation: HMAC-SHA256 keyed by a random salt that only the database holds.
    /// Whoever presents `token` again within the reuse interval gets this same successor, yet a token taken from a
    /// client cannot be turned into its successors without the database.
    static func successor(of token: String, salt: [UInt8]) -> String {
        "rt_" + base64URL(HMAC<SHA256>.authenticationCode(for: Array(token.utf8), using: SymmetricKey(data: salt)))
    }
}
