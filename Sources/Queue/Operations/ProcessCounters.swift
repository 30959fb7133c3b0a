import Foundation
import Synchronization

/// A worker's counts for the registry and the history, kept in memory (a lock per ended job, no Redis call): jobs
/// done and failed since start, and per minute and kind what ended. `ProcessBeacon` writes them at each beat.
public final class ProcessCounters: WorkerObserver {
    private struct State {
        var done = 0
        var failed = 0
        /// Minute start (Unix seconds) → kind → counts not yet written.
        var pending: [Int64: [String: KindMinute]] = [:]
    }
    private let state = Mutex(State())

    public init() {}

    public func jobStarted(kind: String, queue: String) {}

    /// Counts successes as done, retried and dead deliveries as failed, each with its run time; postponed, handed
    /// back, cancelled and expired deliveries are neither.
    public func jobFinished(kind: String, queue: String, outcome: JobEnd, duration: Duration) {
        let succeeded: Bool
        switch outcome {
        case .succeeded: succeeded = true
        case .retried, .dead: succeeded = false
        case .postponed, .handedBack, .cancelled, .expired: return
        }
        let minute = JobHistory.minute(of: Date())
        let ms = Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        state.withLock { state in
            if succeeded { state.done += 1 } else { state.failed += 1 }
            state.pending[minute, default: [:]][kind, default: KindMinute()].succeeded += succeeded ? 1 : 0
            state.pending[minute, default: [:]][kind, default: KindMinute()].failed += succeeded ? 0 : 1
            state.pending[minute, default: [:]][kind, default: KindMinute()].milliseconds += ms
        }
    }

    /// Jobs done and failed here since start.
    public var totals: (done: Int, failed: Int) { state.withLock { ($0.done, $0.failed) } }

    /// Takes the counts not yet written.
    func takePending() -> [Int64: [String: KindMinute]] {
        state.withLock { state in
            defer { state.pending = [:] }
            return state.pending
        }
    }

    /// Puts back counts a failed write did not add.
    func restore(_ counts: [Int64: [String: KindMinute]]) {
        state.withLock { state in
            for (minute, kinds) in counts {
                for (kind, c) in kinds {
                    state.pending[minute, default: [:]][kind, default: KindMinute()].succeeded += c.succeeded
                    state.pending[minute, default: [:]][kind, default: KindMinute()].failed += c.failed
                    state.pending[minute, default: [:]][kind, default: KindMinute()].milliseconds += c.milliseconds
                }
            }
        }
    }
}
