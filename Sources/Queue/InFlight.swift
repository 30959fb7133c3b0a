import Foundation
import Synchronization

/// The jobs running in this process, by stream entry: for lease renewal, timeouts, shutdown and per-queue limits.
final class InFlight: Sendable {
    enum Cancellation: Sendable {
        case timeout, shutdown
        /// An operator cancelled the job (`carbscan jobs cancel`).
        case cancelled
    }

    private struct Running {
        var job: ReservedJob
        var deadline: ContinuousClock.Instant
        /// For the process registry's list of busy jobs.
        var started = Date()
        var task: Task<Void, Never>?
        var cancellation: Cancellation?
    }

    private struct State {
        var running: [RunKey: Running] = [:]
        /// Running jobs per shard (a job's `queue`), kept as they come and go (counting them per fetch was O(in
        /// flight)); by shard, not by queue, which parsed the shard's name twice per job.
        var perShard: [String: Int] = [:]
        /// No running job's deadline is earlier (a bound, not exact: it is not raised when jobs end), so the 100 ms
        /// timeout check skips the scan of every running job until the earliest could have passed (with 10,000 in
        /// flight the scan copied 100,000 entries a second, 3% of a chat worker's CPU).
        var earliestDeadline = ContinuousClock.Instant.now
    }

    private let state = Mutex(State())

    func insert(_ job: ReservedJob, deadline: ContinuousClock.Instant) {
        state.withLock { state in
            if state.running.updateValue(Running(job: job, deadline: deadline), forKey: job.runKey) == nil {
                state.perShard[job.queue, default: 0] += 1
            }
            state.earliestDeadline = min(state.earliestDeadline, deadline)
        }
    }

    /// How many jobs of `queue` (its shards together) run here now.
    func count(inQueue queue: String) -> Int {
        state.withLock { state in
            state.perShard.reduce(0) { $0 + (QueueShards.queue(ofShard: $1.key) == queue ? $1.value : 0) }
        }
    }

    /// Attaches the task after it was created (it may already have finished: then nothing is kept).
    func attach(_ task: Task<Void, Never>, to job: ReservedJob) {
        let entry = job.runKey
        let cancelNow = state.withLock { state -> Bool in
            guard state.running[entry] != nil else { return false }
            state.running[entry]!.task = task
            return state.running[entry]!.cancellation != nil
        }
        if cancelNow { task.cancel() }
    }

    func remove(_ job: ReservedJob) {
        state.withLock { state in
            if let gone = state.running.removeValue(forKey: job.runKey) {
                state.perShard[gone.job.queue, default: 1] -= 1
            }
        }
    }

    func cancellation(of job: ReservedJob) -> Cancellation? { state.withLock { $0.running[job.runKey]?.cancellation } }

    /// Marks jobs past their deadline as timed out; returns their tasks to cancel.
    func expire(now: ContinuousClock.Instant) -> [Task<Void, Never>] {
        state.withLock { state in
            guard state.earliestDeadline <= now else { return [] }
            var tasks: [Task<Void, Never>] = []
            var earliest: ContinuousClock.Instant?
            for (entry, running) in state.running where running.cancellation == nil {
                if running.deadline <= now {
                    state.running[entry]!.cancellation = .timeout
                    if let task = running.task { tasks.append(task) }
                } else {
                    earliest = min(earliest ?? running.deadline, running.deadline)
                }
            }
            // Nothing left to time out: the next insert sets the bound.
            state.earliestDeadline = earliest ?? .now + .seconds(86_400 * 365)
            return tasks
        }
    }

    /// Cancels the task of job `id` for an operator; false when it does not run here.
    func cancel(job id: JobID) -> Bool {
        let task = state.withLock { state -> Task<Void, Never>?? in
            guard let entry = state.running.first(where: { $0.value.job.id == id })?.key else { return nil }
            if state.running[entry]!.cancellation == nil { state.running[entry]!.cancellation = .cancelled }
            return .some(state.running[entry]!.task)
        }
        guard let task else { return false }
        task?.cancel()
        return true
    }

    /// The running jobs with their start times.
    var busyJobs: [BusyJob] {
        state.withLock { $0.running.values.map { BusyJob(id: $0.job.id, kind: $0.job.kind, queue: $0.job.queue, startedAt: $0.started) } }
    }

    /// Cancels every running job for shutdown; returns them.
    func cancelAll() -> [ReservedJob] {
        let running = state.withLock { state -> [Running] in
            for entry in state.running.keys where state.running[entry]!.cancellation == nil {
                state.running[entry]!.cancellation = .shutdown
            }
            return Array(state.running.values)
        }
        for item in running { item.task?.cancel() }
        return running.map(\.job)
    }

    func removeAll() -> [ReservedJob] {
        state.withLock { state in
            defer { state = State() }
            return state.running.values.map(\.job)
        }
    }

    var jobs: [ReservedJob] { state.withLock { $0.running.values.map(\.job) } }
    var isEmpty: Bool { state.withLock { $0.running.isEmpty } }
    var count: Int { state.withLock { $0.running.count } }
}

/// A running job's key: its stream entry's id is unique in its stream only (two queues', or two shards', entries added in
/// the same millisecond share it; keyed by the id alone, one replaced the other and the queue's count of running jobs
/// fell short, letting a limited queue start one too many). Two strings, not their concatenation, which allocated on
/// each of the 3 lookups per job.
struct RunKey: Hashable {
    let queue: String
    let entry: String
}

extension ReservedJob {
    var runKey: RunKey { RunKey(queue: queue, entry: entry) }
}
