import Foundation
import Postgres

public struct ChatMessage: Sendable, Equatable {
    public var id: Int64
    public var message: String
    public var response: String
    public var messageType: String
    public var createdAt: Date
}

public struct ChatMessages: Sendable {
    let db: any PostgresQueryable

    public init(_ db: any PostgresQueryable) { self.db = db }

    /// The user's latest messages, newest first.
    public func history(userID: String, limit: Int) async throws -> [ChatMessage] {
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

/// Per-user counters per period (the user's local date for daily quotas).
public struct UsageCounters: Sendable {
    let db: any PostgresQueryable

    public init(_ db: any PostgresQueryable) { self.db = db }

    public func used(userID: String, kind: String, period: String) async throws -> Int {
        try await db.query(
            "SELECT used FROM usage_counters WHERE user_id = $1 AND kind = $2 AND period = $3", [userID, kind, period]
        ).first?.decode("used") ?? 0
    }

    /// The local date of `date` in `timeZone`, as the period key of daily counters.
    public static func day(of date: Date, in timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}

public struct LoginEvents: Sendable {
    let db: any PostgresQueryable

    public init(_ db: any PostgresQueryable) { self.db = db }

    public func record(eventID: UUID, userID: String, kind: String, provider: String, ip: String?) async throws {
        try await db.execute(
            "INSERT INTO login_events (event_id, user_id, kind, provider, ip) VALUES ($1, $2, $3, $4, $5)",
            [eventID, userID, kind, provider, ip]
        )
    }
}

extension ChatMessages {
    /// Stores the job's exchange once per job id; returns the row's id.
    public func insertOnce(
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

/// The daily chat quota: counted when a message is accepted, in the user's local day.
public struct ChatQuota: Sendable {
    let db: any PostgresQueryable

    public init(_ db: any PostgresQueryable) { self.db = db }

    /// Counts one message against today's limit (nil: unlimited) atomically; returns today's count after it, or
    /// nil when the limit is reached (nothing counted).
    public func take(userID: String, day: String, limit: Int?) async throws -> Int? {
        let rows = try await db.query(
            """
            INSERT INTO usage_counters (user_id, kind, period, used) VALUES ($1, 'chat', $2, 1)
            ON CONFLICT (user_id, kind, period) DO UPDATE SET used = usage_counters.used + 1
            WHERE $3::bigint IS NULL OR usage_counters.used < $3::bigint
            RETURNING used
            """,
            [userID, day, limit])
        return try rows.first?.decode("used")
    }
}
