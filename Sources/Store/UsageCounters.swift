import Foundation
import Postgres

/// Per-user counters per period (the user's local date for daily quotas).
package struct UsageCounters: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    package func used(userID: String, kind: String, period: String) async throws -> Int {
        try await db.query(
            "SELECT used FROM usage_counters WHERE user_id = $1 AND kind = $2 AND period = $3", [userID, kind, period]
        ).first?.decode("used") ?? 0
    }

    /// The local date of `date` in `timeZone`, as the period key of daily counters.
    package static func day(of date: Date, in timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
