import Foundation
import Postgres

/// The daily chat quota: counted when a message is accepted, in the user's local day.
package struct ChatQuota: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// Counts one message against today's limit (nil: unlimited) atomically; returns today's count after it, or
    /// nil when the limit is reached (nothing counted).
    package func take(userID: String, day: String, limit: Int?) async throws -> Int? {
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

    /// The day's count so far.
    package func used(userID: String, day: String) async throws -> Int {
        try await db.query(
            "SELECT used FROM usage_counters WHERE user_id = $1 AND kind = 'chat' AND period = $2", [userID, day]
        ).first?.decode("used") ?? 0
    }
}
