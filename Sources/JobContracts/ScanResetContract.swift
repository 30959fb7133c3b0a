import Queue

/// `scan-reset` (jobs/scan-reset.yml): restores the scan quota of the users of one scope whose period has begun.
/// Enqueued by its daily and monthly schedules, or by an operator re-running a period.
package enum ScanResetContract: JobContract {
    package static let name = "scan-reset"

    /// The free tier resets daily, the paid tiers monthly.
    package enum Scope: String, Codable, Sendable {
        case daily, monthly
    }

    package struct Parameters: Codable, Sendable, Equatable {
        package var scope: Scope
        /// `2026-11-22` (daily) or `2026-11` (monthly); nil: the period of the fire time.
        package var period: String?

        package init(scope: Scope, period: String? = nil) {
            self.scope = scope
            self.period = period
        }
    }

    package struct Result: Codable, Sendable, Equatable {
        /// The period reset, named as `Parameters.period` names one.
        package var period: String
        package var scope: Scope
        package var usersReset: Int
        package var batches: Int
        package var longestBatchMs: Double
        package var elapsedMs: Double

        package init(period: String, scope: Scope, usersReset: Int, batches: Int, longestBatchMs: Double, elapsedMs: Double) {
            self.period = period
            self.scope = scope
            self.usersReset = usersReset
            self.batches = batches
            self.longestBatchMs = longestBatchMs
            self.elapsedMs = elapsedMs
        }
    }
}
