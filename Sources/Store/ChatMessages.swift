import Foundation
import Postgres

package struct ChatMessage: Sendable, Equatable {
    package var id: Int64
    package var message: String
    package var response: String
    package var messageType: String
    package var createdAt: Date
}

package struct ChatMessages: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// The user's latest messages, newest first.
    package func history(userID: String, limit: Int) async throws -> [ChatMessage] {
        try await db.query(
            """
            SELECT id, message, response, message_type, created_at FROM chat_messages
            WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2
            """,
            [userID, limit]
        ).map { row in
            ChatMessage(
                id: try row.decode("id"), message: try row.decode("message"), response: try row.decode("response"),
                messageType: try row.decode("message_type"), createdAt: try row.decode("created_at"))
        }
    }
}

/// What storing a chat answer left behind: the answer's row, and the chats counted on the reservation's day with the
/// user's tier as of that statement (nil without a reservation: a job enqueued before chats were reserved).
package struct StoredChatAnswer: Sendable, Equatable {
    package var id: Int64
    package var usedOnItsDay: Int?
    package var tier: Tier?
}

extension ChatMessages {
    /// Stores the job's exchange once per job id and reads the day's usage, in one statement (one round trip, atomic
    /// on its own). The chat its message reserved is charged by the queue when the job's success is recorded.
    package func insertOnce(
        userID: String, jobID: String, messageID: String, message: String, response: String, messageType: String, followUps: [String]
    ) async throws -> StoredChatAnswer {
        let followUpsJSON = String(decoding: try JSONEncoder().encode(followUps), as: UTF8.self)
        // A data-modifying CTE runs once whether or not the query reads it.
        let rows = try await db.query(
            """
            WITH inserted AS (
                INSERT INTO chat_messages (user_id, job_id, message, response, message_type, follow_up_questions)
                VALUES ($1, $2::uuid, $3, $4, $5, $6::jsonb)
                ON CONFLICT (job_id) DO NOTHING RETURNING id
            )
            SELECT (SELECT id FROM inserted) AS id,
                (SELECT COALESCE(c.used, 0)::int FROM chat_reservations r
                 LEFT JOIN usage_counters c ON c.user_id = r.user_id AND c.kind = 'chat' AND c.period = r.day
                 WHERE r.message_id = $7::uuid) AS used,
                (SELECT subscription_tier FROM users WHERE id = $1) AS tier
            """,
            [userID, jobID, message, response, messageType, followUpsJSON, messageID])
        let row = rows[rows.startIndex]
        let used: Int? = try row.decode("used")
        let tier = try row.decode("tier", as: String?.self).map { Tier(rawValue: $0) ?? .free }
        if let id: Int64 = try row.decode("id") { return StoredChatAnswer(id: id, usedOnItsDay: used, tier: tier) }
        // A re-delivery (or a twin still running): the row exists, committed after this statement's snapshot perhaps.
        let existing = try await db.query("SELECT id FROM chat_messages WHERE job_id = $1::uuid", [jobID])
        guard let first = existing.first else { throw StoreError("chat message of job \(jobID) was neither inserted nor found") }
        return StoredChatAnswer(id: try first.decode("id"), usedOnItsDay: used, tier: tier)
    }
}
