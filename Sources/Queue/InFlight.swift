import Synchronization

/// The jobs running in this process, by stream entry: for lease renewal, timeouts and shutdown.
final class InFlight: Sendable {
    enum Cancellation: Sendable { case timeout, shutdown }

    private struct Running {
        var job: ReservedJob
        var deadline: ContinuousClock.Instant
        var task: Task<Void, Never>?
        var cancellation: Cancellation?
    }

    private let state = Mutex([String: Running]())

    func insert(_ job: ReservedJob, deadline: ContinuousClock.Instant) {
        state.withLock { $0[job.entry] = Running(job: job, deadline: deadline) }
    }

    /// Attaches the task after it was created (it may already have finished: then nothing is kept).
    func attach(_ task: Task<Void, Never>, to entry: String) {
        let cancelNow = state.withLock { state -> Bool in
            guard state[entry] != nil else { return false }
            state[entry]!.task = task
            return state[entry]!.cancellation != nil
        }
        if cancelNow { task.cancel() }
    }

    func remove(_ entry: String) { _ = state.withLock { $0.removeValue(forKey: entry) } }

    func cancellation(of entry: String) -> Cancellation? { state.withLock { $0[entry]?.cancellation } }

    /// Marks jobs past their deadline as timed out; returns their tasks to cancel.
    func expire(now: ContinuousClock.Instant) -> [Task<Void, Never>] {
        state.withLock { state in
            var tasks: [Task<Void, Never>] = []
            for (entry, running) in state where running.cancellation == nil && running.deadline <= now {
                state[entry]!.cancellation = .timeout
                if let task = running.task { tasks.append(task) }
            }
            return tasks
        }
    }

    /// Cancels every running job for shutdown; returns them.
    func cancelAll() -> [ReservedJob] {
        let running = state.withLock { state -> [Running] in
            for entry in state.keys where state[entry]!.cancellation == nil { state[entry]!.cancellation = .shutdown }
            return Array(state.values)
        }
        for item in running { item.task?.cancel() }
        return running.map(\.job)
    }

    func removeAll() -> [ReservedJob] {
        state.withLock { state in
            defer { state.removeAll() }
            return state.values.map(\.job)
        }
    }

    var jobs: [ReservedJob] { state.withLock { $0.values.map(\.job) } }
    var isEmpty: Bool { state.withLock { $0.isEmpty } }
}
