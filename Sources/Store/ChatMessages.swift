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

extension ChatMessages {
    /// Stores the job's exchange once per job id; returns the row's id.
    package func insertOnce(
        userID: String, jobID: String, message: String, response: String, messageType: String, followUps: [String]
    ) async throws -> Int64 {
        let followUpsJSON = String(decoding: try JSONEncoder().encode(followUps), as: UTF8.self)
        let inserted = try await db.query(
            """
            INSERT INTO chat_messages (user_id, job_id, message, response, message_type, follow_up_questions)
            VALUES ($1, $2::uuid, $3, $4, $5, $6::jsonb)
            ON CONFLICT (job_id) DO NOTHING RETURNING id
            """,
            [userID, jobID, message, response, messageType, followUpsJSON])
        if let row = inserted.first { return try row.decode("id") }
        let existing = try await db.query("SELECT id FROM chat_messages WHERE job_id = $1::uuid", [jobID])
        guard let row = existing.first else { throw StoreError("chat message of job \(jobID) was neither inserted nor found") }
        return try row.decode("id")
    }
}
