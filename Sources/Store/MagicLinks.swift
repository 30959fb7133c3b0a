import Foundation
import Postgres

/// Sign-in links: a token's SHA-256, the user it signs in, and when it stops working. A token is used at most once:
/// `consume` marks it used in the same statement that checks it.
package struct MagicLinks: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// Stores a new link, and drops the user's links that expired (so the table holds only live ones).
    package func insert(tokenHash: [UInt8], userID: String, expiresAt: Date) async throws {
        try await db.execute("DELETE FROM magic_links WHERE user_id = $1 AND expires_at < now()", [userID])
        try await db.execute(
            "INSERT INTO magic_links (token_hash, user_id, expires_at) VALUES ($1, $2, $3)", [tokenHash, userID, expiresAt])
    }

    /// The user the token signs in, once: nil when it is unknown, expired or already used.
    package func consume(tokenHash: [UInt8]) async throws -> String? {
        try await db.query(
            """
            UPDATE magic_links SET used_at = now()
            WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
            RETURNING user_id
            """, [tokenHash]
        ).first?.decode("user_id")
    }
}
