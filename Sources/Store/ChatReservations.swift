import Foundation
import Postgres

/// The chat a message holds against its day's limit: reserved when the message is accepted (`ChatQuota.take` and
/// its job in the same transaction), then charged when its job succeeded or refunded once when it died or was
/// cancelled, by the queue's settlement (``QuotaReservation``) — each transition at most once, guarded by the
/// reservation's status, so a failed chat never costs the user a chat.
package struct ChatReservations: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    package func insert(messageID: String, userID: String, day: String, jobID: String) async throws {
        try await db.execute(
            "INSERT INTO chat_reservations (message_id, user_id, day, job_id) VALUES ($1::uuid, $2, $3, $4::uuid)",
            [messageID, userID, day, jobID])
    }

    /// The chats are spent: their jobs succeeded.
    package func charge(messageIDs: [String]) async throws {
        // As an array literal: only ids that read as UUIDs (nothing else can be in the column).
        let ids = messageIDs.compactMap { UUID(uuidString: $0)?.uuidString }
        guard !ids.isEmpty else { return }
        try await db.execute(
            """
            UPDATE chat_reservations SET status = 'charged', settled_at = now()
            WHERE message_id = ANY($1::uuid[]) AND status = 'reserved'
            """,
            ["{" + ids.joined(separator: ",") + "}"])
    }

    /// Gives the chat back to its day, once. Returns whether this call refunded it.
    @discardableResult
    package func refund(messageID: String) async throws -> Bool {
        let rows = try await db.query(
            """
            WITH settled AS (
                UPDATE chat_reservations SET status = 'refunded', settled_at = now()
                WHERE message_id = $1::uuid AND status = 'reserved' RETURNING user_id, day
            )
            UPDATE usage_counters SET used = GREATEST(used - 1, 0)
            FROM settled WHERE usage_counters.user_id = settled.user_id AND usage_counters.kind = 'chat'
              AND usage_counters.period = settled.day
            RETURNING usage_counters.user_id
            """,
            [messageID])
        return !rows.isEmpty
    }

    package func status(messageID: String) async throws -> String? {
        try await db.query("SELECT status FROM chat_reservations WHERE message_id = $1::uuid", [messageID]).first?.decode("status")
    }
}
