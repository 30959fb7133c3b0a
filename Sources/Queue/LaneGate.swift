import Synchronization

/// A running fair job of a rate-limited kind (``Fairness``): it holds its place in its queue's window until it takes
/// its provider token, so the jobs past their lanes are the ones waiting for the provider, a window's worth at most,
/// and the lanes behind them take turns. The worker binds it to the job's task; the rate limiter passes it once a
/// token is granted.
public final class LaneGate: Sendable {
    /// The gate of the job the current task runs, nil outside a gated fair job.
    @TaskLocal public static var current: LaneGate?

    private let queue: JobQueue
    private let shard: String
    private let id: JobID
    private let passed = Atomic<Bool>(false)

    package init(queue: JobQueue, shard: String, id: JobID) {
        self.queue = queue
        self.shard = shard
        self.id = id
    }

    /// The job took its token: it leaves the window, once (a second token does nothing). Should Redis not answer, the
    /// job leaves the window when it ends instead.
    public func pass() async {
        guard !passed.exchange(true, ordering: .relaxed) else { return }
        _ = try? await queue.redis.run(LanePassCall(queue.keys(shard), id: id))
    }
}
