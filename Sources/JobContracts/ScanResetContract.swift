import Queue

/// `scan-reset` (jobs/scan-reset.yml): restores the scan quota of the users of one scope whose period has begun.
/// Enqueued by its daily and monthly schedules, or by an operator re-running a period.
public enum ScanResetContract: JobContract {
    public static let name = "scan-reset"

    /// The free tier resets daily, the paid tiers monthly.
    public enum Scope: String, Codable, Sendable {
        case daily, monthly
    }

    public struct Parameters: Codable, Sendable, Equatable {
        public var scope: Scope
        /// `2026-11-22` (daily) or `2026-11` (monthly); nil: the period of the fire time.
        public var period: String?

        public init(scope: Scope, period: String? = nil) {
            self.scope = scope
            self.period = period
        }
    }

    public struct Result: Codable, Sendable, Equatable {
        /// The period reset, named as `Parameters.period` names one.
        public var period: String
        public var scope: Scope
        public var usersReset: Int
        public var batches: Int
        public var longestBatchMs: Double
        public var elapsedMs: Double

        public init(period: String, scope: Scope, usersReset: Int, batches: Int, longestBatchMs: Double, elapsedMs: Double) {
            self.period = period
            self.scope = scope
            self.usersReset = usersReset
            self.batches = batches
            self.longestBatchMs = longestBatchMs
            self.elapsedMs = elapsedMs
        }
    }
}
