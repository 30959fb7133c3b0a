/// What a worker tells its observers about the jobs it runs: the seam metrics and the process registry's
/// counters hang on, so the engine knows nothing of either. Calls come from the jobs' own tasks and must not block.
public protocol WorkerObserver: Sendable {
    /// A delivery of a job started running in this process.
    func jobStarted(kind: String, queue: String)
    /// A delivery ended: `outcome` is what will be recorded for it, `duration` how long its handler ran.
    func jobFinished(kind: String, queue: String, outcome: JobEnd, duration: Duration)
    /// The same end with the job itself (its id and payload), for observers that act on a job's end (a push to its
    /// owner). Called before the outcome is recorded, and again if a redelivery ends again.
    func jobEnded(_ job: ReservedJob, outcome: JobEnd)
}

extension WorkerObserver {
    public func jobEnded(_ job: ReservedJob, outcome: JobEnd) {}
}

/// How one delivery of a job ended, as observers see it.
public enum JobEnd: String, Sendable, CaseIterable {
    case succeeded
    /// Failed and will be retried after a backoff.
    case retried
    /// Failed for good: in the dead set.
    case dead
    /// A dependency (Redis, Postgres) was down: tried again later, the attempt does not count.
    case postponed
    /// Handed back unfinished at shutdown.
    case handedBack = "handed_back"
    /// Cancelled by an operator (`carbscan jobs cancel`) while it ran.
    case cancelled
    /// Not started by its kind's `start_by` time: ended without running.
    case expired
}

extension JobOutcome {
    var end: JobEnd {
        switch kind {
        case .succeeded: .succeeded
        case .retry: .retried
        case .dead: .dead
        case .postpone: .postponed
        case .requeue: .handedBack
        case .cancel: .cancelled
        }
    }
}
