import Foundation
import Postgres

/// A user's scan quota as the analysis endpoint sees it. Every call first resets the user whose reset date has
/// passed (belt and braces: a user the scan-reset job has not reached yet, or skipped, still gets their new
/// period's scans), under the same guard as the job, `scan_reset_date <= now`, so the two never reset a period twice.
package struct ScanQuota: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// The user's remaining scans, next reset and tier, after resetting them when their reset date has passed.
    /// Writes only when a reset is due.
    /// - Parameter timeZone: the zone of the reset schedule's midnights (`WorkerSettings.scanResetTimeZone`).
    package func current(userID: String, now: Date, timeZone: TimeZone) async throws -> (remaining: Int, resetDate: Date, tier: Tier) {
        let rows = try await db.query(
            """
            WITH reset AS (
                UPDATE users SET remaining_scans = \(Self.limitSQL), scan_reset_date = \(Self.nextResetSQL)
                WHERE id = $1 AND scan_reset_date <= $2::timestamptz
                RETURNING remaining_scans, scan_reset_date, subscription_tier
            )
            SELECT remaining_scans, scan_reset_date, subscription_tier FROM reset
            UNION ALL
            SELECT remaining_scans, scan_reset_date, subscription_tier FROM users
            WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM reset)
            """,
            [userID, now] + Self.nextResets(after: now, in: timeZone))
        guard let row = rows.first else { throw StoreError("no user \(userID)") }
        return (
            try row.decode("remaining_scans"), try row.decode("scan_reset_date"),
            Tier(rawValue: try row.decode("subscription_tier", as: String.self)) ?? .free
        )
    }

    /// Takes one scan, atomically: false when none is left. A due reset happens in the same statement, so the
    /// first scan of a new period never fails for want of the nightly job.
    package func reserve(userID: String, now: Date, timeZone: TimeZone) async throws -> Bool {
        try await db.execute(
            """
            UPDATE users SET
                remaining_scans = CASE WHEN scan_reset_date <= $2::timestamptz THEN \(Self.limitSQL) ELSE remaining_scans END - 1,
                scan_reset_date = CASE WHEN scan_reset_date <= $2::timestamptz THEN \(Self.nextResetSQL) ELSE scan_reset_date END
            WHERE id = $1 AND (scan_reset_date <= $2::timestamptz OR remaining_scans > 0)
            """,
            [userID, now] + Self.nextResets(after: now, in: timeZone)) == 1
    }

    /// Gives one scan back, never past the tier's limit (a refund after a reset must not grant an extra scan).
    package func refund(userID: String) async throws {
        try await db.execute("UPDATE users SET remaining_scans = LEAST(remaining_scans + 1, \(Self.limitSQL)) WHERE id = $1", [userID])
    }

    /// The tier's scan limit, in SQL over `subscription_tier`: built from `Tier`, so the limits live in one place.
    static var limitSQL: String {
        "CASE subscription_tier " + Tier.allCases.map { "WHEN '\($0.rawValue)' THEN \($0.scanLimit)" }.joined(separator: " ")
            + " ELSE \(Tier.free.scanLimit) END"
    }

    /// The next reset by the tier's period: `$3` (daily) or `$4` (monthly), as `nextResets` binds them.
    static var nextResetSQL: String {
        "CASE WHEN subscription_tier IN ("
            + Tier.allCases.filter { $0.scanResetPeriod == .daily }.map { "'\($0.rawValue)'" }
            .joined(separator: ", ") + ") THEN $3::timestamptz ELSE $4::timestamptz END"
    }

    static func nextResets(after now: Date, in timeZone: TimeZone) -> [(any PostgresEncodable)?] {
        [Tier.free.nextScanReset(after: now, in: timeZone), Tier.pro.nextScanReset(after: now, in: timeZone)]
    }
}

/// The scan-reset job's writes: one tier's due users get their full quota back, in short batches.
package struct ScanResets: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// What one reset pass did. `longestBatch` is the longest transaction, i.e. the longest any row stayed locked.
    package struct Outcome: Sendable, Equatable {
        package var usersReset = 0
        package var batches = 0
        package var longestBatch: Duration = .zero
        package init() {}
    }

    /// Resets every user of `tier` whose reset date is at or before `periodStart` to the tier's limit, with
    /// `nextReset` as their new reset date (after `periodStart`, so the guard then excludes them: a re-run, a
    /// re-delivered job or a second scheduler's duplicate changes nothing).
    ///
    /// Each batch is one statement (its own transaction) of at most `batchSize` users, walking the primary key
    /// so no batch rescans what an earlier one touched. Rows locked at that moment (a scan being reserved) are
    /// skipped rather than waited for, then swept at the end by batches that do wait: the sweep sees only the few
    /// skipped rows, found through the `(subscription_tier, scan_reset_date)` index.
    package func reset(tier: Tier, periodStart: Date, nextReset: Date, batchSize: Int = 5000) async throws -> Outcome {
        precondition(nextReset > periodStart, "the new reset date must lie after the period start, or the guard fails")
        var outcome = Outcome()
        var after = ""
        while true {
            let (count, last) = try await batch(
                """
                SELECT id FROM users WHERE id > $5 AND subscription_tier = $1 AND scan_reset_date <= $2::timestamptz
                ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED
                """,
                [tier.rawValue, periodStart, tier.scanLimit, batchSize, after, nextReset], outcome: &outcome)
            guard let last, count >= batchSize else { break }
            after = last
        }
        while true {
            let (count, _) = try await batch(
                """
                SELECT id FROM users WHERE id > $5 AND subscription_tier = $1 AND scan_reset_date <= $2::timestamptz
                LIMIT $4 FOR UPDATE
                """,
                [tier.rawValue, periodStart, tier.scanLimit, batchSize, "", nextReset], outcome: &outcome)
            if count == 0 { break }
        }
        return outcome
    }

    /// Runs one batch over the ids `select` picks (`$1` tier, `$2` period start, `$4` batch size, `$5` key);
    /// returns how many it reset and the largest id it reset.
    private func batch(_ select: String, _ parameters: [(any PostgresEncodable)?], outcome: inout Outcome) async throws -> (Int, String?) {
        let clock = ContinuousClock()
        let start = clock.now
        let rows = try await db.query(
            """
            WITH due AS (\(select)),
            done AS (
                UPDATE users u SET remaining_scans = $3, scan_reset_date = $6::timestamptz, updated_at = now()
                FROM due WHERE u.id = due.id RETURNING u.id
            )
            SELECT count(*) AS n, max(id) AS last FROM done
            """,
            parameters)
        let elapsed = clock.now - start
        let count: Int = try rows[rows.startIndex].decode("n")
        let last: String? = try rows[rows.startIndex].decode("last")
        if count > 0 {
            outcome.usersReset += count
            outcome.batches += 1
            outcome.longestBatch = max(outcome.longestBatch, elapsed)
        }
        return (count, last)
    }
}
