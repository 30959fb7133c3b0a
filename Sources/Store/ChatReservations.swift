import Foundation
import Postgres

/// The chat a message holds against its day's limit: reserved when the message is accepted (`ChatQuota.take` in
/// the same transaction), then charged when its answer is stored or refunded once when its job dies — each
/// transition at most once, guarded by the reservation's status, so a failed chat never costs the user a chat.
package struct ChatReservations: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    package func insert(messageID: String, userID: String, day: String) async throws {
        try await db.execute(
            "INSERT INTO chat_reservations (message_id, user_id, day) VALUES ($1::uuid, $2, $3)", [messageID, userID, day])
    }

    /// Notes the chat job of a reserved message.
    package func attach(messageID: String, jobID: String) async throws {
        try await db.execute("UPDATE chat_reservations SET job_id = $2::uuid WHERE message_id = $1::uuid", [messageID, jobID])
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

    /// Reservations still open after `cutoff`: (message, job) — their jobs should long have ended.
    package func open(olderThan cutoff: Date, limit: Int) async throws -> [(messageID: String, jobID: String?)] {
        try await db.query(
            """
            SELECT message_id::text AS message_id, job_id::text AS job_id FROM chat_reservations
            WHERE status = 'reserved' AND created_at < $1::timestamptz ORDER BY created_at LIMIT $2
            """,
            [cutoff, limit]
        ).map { (try $0.decode("message_id"), try $0.decode("job_id")) }
    }

    package func status(messageID: String) async throws -> String? {
        try await db.query("SELECT status FROM chat_reservations WHERE message_id = $1::uuid", [messageID]).first?.decode("status")
    }
}
