import Foundation
import JSON
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

/// A chat job's exchange to store: the user's message and the model's tidied answer.
package struct NewChatAnswer: Sendable, Equatable {
    package var userID: String
    package var jobID: String
    package var messageID: String
    package var message: String
    package var response: String
    package var messageType: String
    package var followUps: [String]

    package init(
        userID: String, jobID: String, messageID: String, message: String, response: String, messageType: String, followUps: [String]
    ) {
        self.userID = userID
        self.jobID = jobID
        self.messageID = messageID
        self.message = message
        self.response = response
        self.messageType = messageType
        self.followUps = followUps
    }

    func json(_ n: Int) -> JSONValue {
        [
            "n": .int(n), "user_id": .string(userID), "job_id": .string(jobID), "message_id": .string(messageID),
            "message": .string(message), "response": .string(response), "message_type": .string(messageType),
            "follow_ups": .array(followUps.map(JSONValue.string)),
        ]
    }
}

extension ChatMessages {
    /// Stores each job's exchange once per job id and reads its reservation's day's usage, in one statement (one round
    /// trip, one commit, atomic on its own): the worker's group commit (``batchedWriter(_:)``) writes the answers of the
    /// chats that end together with it. The chat a message reserved is charged by the queue when the job's success is
    /// recorded. Returns one stored answer per answer, in order.
    package func insertMany(_ answers: [NewChatAnswer]) async throws -> [StoredChatAnswer] {
        guard !answers.isEmpty else { return [] }
        let input = JSONValue.array(answers.enumerated().map { $1.json($0) })
        // A data-modifying CTE runs once whether or not the query reads it; a job id twice in one batch is inserted once.
        let rows = try await db.query(
            """
            WITH input AS (
                SELECT * FROM jsonb_to_recordset($1::jsonb) AS t(n int, user_id text, job_id uuid, message_id uuid,
                    message text, response text, message_type text, follow_ups jsonb)
            ), inserted AS (
                INSERT INTO chat_messages (user_id, job_id, message, response, message_type, follow_up_questions)
                SELECT user_id, job_id, message, response, message_type, follow_ups FROM input ORDER BY n
                ON CONFLICT (job_id) DO NOTHING RETURNING id, job_id
            )
            SELECT i.n, (SELECT id FROM inserted s WHERE s.job_id = i.job_id) AS id,
                (SELECT COALESCE(c.used, 0)::int FROM chat_reservations r
                 LEFT JOIN usage_counters c ON c.user_id = r.user_id AND c.kind = 'chat' AND c.period = r.day
                 WHERE r.message_id = i.message_id) AS used,
                (SELECT subscription_tier FROM users WHERE id = i.user_id) AS tier
            FROM input i ORDER BY i.n
            """,
            [input.jsonString])
        var ids: [Int64?] = []
        let stored: [StoredChatAnswer] = try rows.map { row in
            ids.append(try row.decode("id"))
            let tier = try row.decode("tier", as: String?.self).map { Tier(rawValue: $0) ?? .free }
            return StoredChatAnswer(id: 0, usedOnItsDay: try row.decode("used"), tier: tier)
        }
        guard stored.count == answers.count else { throw StoreError("\(answers.count) chat answers stored as \(stored.count) rows") }
        // Re-deliveries (or twins still running): their rows exist, committed after this statement's snapshot perhaps.
        try await JobRows.fillMissing(&ids, jobIDs: answers.map(\.jobID), in: "chat_messages", db)
        return try zip(answers, zip(ids, stored)).map { answer, row in
            guard let id = row.0 else { throw StoreError("chat message of job \(answer.jobID) was neither inserted nor found") }
            var result = row.1
            result.id = id
            return result
        }
    }

    /// The worker's group commit of chat answers (see ``GroupCommit``): the answers of chats ending together are stored
    /// in one statement.
    package static func batchedWriter(_ database: PostgresClient) -> GroupCommit<NewChatAnswer, StoredChatAnswer> {
        GroupCommit(database: database) { answers, database in try await ChatMessages(database).insertMany(answers) }
    }
}
