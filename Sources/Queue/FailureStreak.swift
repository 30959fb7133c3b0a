import Logging

/// One loop's run of consecutive failures (fetching, recording, promoting…): logged once when it starts and once
/// when it ends, never once per try, and paced by a growing delay. Two workers used to write 440 error lines in an
/// 11 s Redis outage, one per loop per queue per try.
public struct FailureStreak: Sendable {
    public let what: String
    private(set) var failures = 0
    private var since: ContinuousClock.Instant?

    public init(_ what: String) { self.what = what }

    /// Records a failure; returns how long to wait before the next try.
    public mutating func failed(_ error: any Error, logger: Logger, metadata: Logger.Metadata = [:]) -> Duration {
        failures += 1
        if failures == 1 {
            since = .now
            logger.error(
                "\(what) failed; retrying until it recovers", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
        return retryDelay(afterFailures: failures)
    }

    /// Records a success, logging the recovery when it ends a streak.
    public mutating func succeeded(logger: Logger) {
        guard failures > 0 else { return }
        let seconds = since.map { ContinuousClock.now - $0 } ?? .zero
        logger.info("\(what) recovered", metadata: ["failures": "\(failures)", "after": "\(seconds)"])
        failures = 0
        since = nil
    }
}
