import Foundation
import Postgres

/// A stored refresh token: only the SHA-256 of the token is kept.
package struct RefreshTokenRecord: Sendable, Equatable {
    package var id: Int64
    package var userID: String
    package var familyID: UUID
    package var deviceID: String?
    package var expiresAt: Date
    package var replacedAt: Date?
    package var revokedAt: Date?
    /// With rotation: the salt this token's successor was derived from (`AccountService.successor`).
    package var rotationSalt: [UInt8]?
}

/// Refresh tokens. A family is one sign-in: its first token and, with rotation on, the chain of its successors.
package struct RefreshTokens: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    package func insert(userID: String, tokenHash: [UInt8], familyID: UUID, deviceID: String?, expiresAt: Date) async throws {
        try await db.execute(
            "INSERT INTO refresh_tokens (user_id, token_hash, family_id, device_id, expires_at) VALUES ($1, $2, $3, $4, $5)",
            [userID, tokenHash, familyID, deviceID, expiresAt]
        )
    }

    package func find(tokenHash: [UInt8]) async throws -> RefreshTokenRecord? {
        try await db.query(
            """
            SELECT id, user_id, family_id, device_id, expires_at, replaced_at, revoked_at, rotation_salt
            FROM refresh_tokens WHERE token_hash = $1
            """,
            [tokenHash]
        ).first.map { row in
            RefreshTokenRecord(
                id: try row.decode("id"), userID: try row.decode("user_id"), familyID: try row.decode("family_id"),
                deviceID: try row.decode("device_id"), expiresAt: try row.decode("expires_at"),
                replacedAt: try row.decode("replaced_at"), revokedAt: try row.decode("revoked_at"),
                rotationSalt: try row.decode("rotation_salt"))
        }
    }

    /// Marks a live token as used up by a rotation at `time`, keeping the salt of its successor. Exactly one of
    /// several concurrent callers wins (true); the others wait for its commit and then see the token replaced.
    package func markReplaced(id: Int64, at time: Date, successorSalt: [UInt8]) async throws -> Bool {
        try await db.execute(
            """
            UPDATE refresh_tokens SET replaced_at = $2, rotation_salt = $3
            WHERE id = $1 AND replaced_at IS NULL AND revoked_at IS NULL
            """,
            [id, time, successorSalt]
        ) == 1
    }

    /// Revokes every token of a family that is not revoked yet; returns how many.
    @discardableResult
    package func revokeFamily(_ familyID: UUID, reason: String) async throws -> Int {
        try await db.execute(
            "UPDATE refresh_tokens SET revoked_at = now(), revoked_reason = $2 WHERE family_id = $1 AND revoked_at IS NULL",
            [familyID, reason]
        )
    }

    /// Revokes all of a user's live tokens; returns their families.
    package func revokeAll(userID: String, reason: String) async throws -> [UUID] {
        try await db.query(
            """
            UPDATE refresh_tokens SET revoked_at = now(), revoked_reason = $2
            WHERE user_id = $1 AND revoked_at IS NULL RETURNING family_id
            """,
            [userID, reason]
        ).map { try $0.decode("family_id", as: UUID.self) }
    }

    /// Whether any token of the family was revoked: access tokens of a revoked sign-in stop working.
    package func isFamilyRevoked(_ familyID: UUID) async throws -> Bool {
        try await db.query(
            "SELECT 1 FROM refresh_tokens WHERE family_id = $1 AND revoked_at IS NOT NULL LIMIT 1", [familyID]
        ).isEmpty == false
    }
}
