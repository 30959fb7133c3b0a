import JSON
import Queue

/// `noop` (jobs/noop.yml): does nothing, or exactly what its payload asks, so tests, chaos runs and benchmarks can
/// drive the engine end to end through real worker processes.
package enum NoopContract: JobContract {
    package static let name = "noop"

    package struct Parameters: Codable, Sendable, Equatable {
        /// Sleep this long (cancellable), to simulate work.
        package var sleepMs: Int?
        /// RPUSH the job id onto this Redis list after the work: the effect a chaos test counts.
        package var record: String?
        /// INCR this Redis key after the work (a completion counter for benchmarks).
        package var counter: String?
        /// Enqueue time (unix seconds): RPUSH the pickup latency in µs onto `latency` when the job starts.
        package var stamp: Double?
        package var latency: String?
        /// Fail this way: `retry` (a retryable error), `permanent`, `outage` (Redis unreachable, as the client
        /// reports it: what the engine postpones without spending an attempt), or `crash` (trap the whole worker
        /// process: a poison message, for chaos tests).
        package var fail: String?
        /// Returned as the job's result.
        package var result: JSONValue?

        package init(
            sleepMs: Int? = nil, record: String? = nil, counter: String? = nil, stamp: Double? = nil, latency: String? = nil,
            fail: String? = nil, result: JSONValue? = nil
        ) {
            self.sleepMs = sleepMs
            self.record = record
            self.counter = counter
            self.stamp = stamp
            self.latency = latency
            self.fail = fail
            self.result = result
        }
    }

    /// The payload's `result`, whatever JSON it is.
    package typealias Result = JSONValue
}
