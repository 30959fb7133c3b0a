import Redis

/// A queue as the operator's listing shows it: its counts and whether it is paused.
public struct QueueOverview: Sendable, Codable, Equatable {
    public var queue: String
    public var paused: Bool
    public var queued: Int
    public var running: Int
    public var scheduled: Int
    public var retrying: Int
    public var dead: Int
    /// The queue's limit across processes (`global_limit:`), nil without one.
    public var globalLimit: Int?
    /// The permits of that limit live processes hold now (their running jobs' and a fetch's), nil without one.
    public var permitsHeld: Int?
}

/// Pausing queues: workers take no new job of a paused queue (within about a second: they read the paused set once a
/// second, not per fetch) and finish those they run; enqueues are still accepted, and delayed jobs and retries still
/// move onto its stream when due. Resuming lets workers take its jobs again.
public struct QueueControl: Sendable {
    let queue: JobQueue

    public init(queue: JobQueue) { self.queue = queue }

    /// Pauses `name`. Throws `QueueError.unknownQueue` when no kind of the catalog uses it.
    public func pause(queue name: String) async throws {
        try check(name)
        try await queue.redis.send(["SADD", queue.operationsKeys.paused, name])
    }

    /// Resumes `name` (nothing happens if it was not paused).
    public func resume(queue name: String) async throws {
        try check(name)
        try await queue.redis.send(["SREM", queue.operationsKeys.paused, name])
    }

    /// The queues paused now.
    public func pausedQueues() async throws -> Set<String> {
        Set(try await queue.redis.send(["SMEMBERS", queue.operationsKeys.paused]).array?.compactMap(\.string) ?? [])
    }

    /// Every queue of the catalog with its counts and paused state.
    public func overview() async throws -> [QueueOverview] {
        let paused = try await pausedQueues()
        let limits = queue.catalog.globalLimits
        var overviews: [QueueOverview] = []
        for stats in try await queue.stats() {
            var overview = QueueOverview(
                queue: stats.queue, paused: paused.contains(stats.queue), queued: stats.queued, running: stats.running,
                scheduled: stats.scheduled, retrying: stats.retrying, dead: stats.dead)
            if let limit = limits[stats.queue] {
                overview.globalLimit = limit
                overview.permitsHeld = try await queue.permitsHeld(queue: stats.queue)
            }
            overviews.append(overview)
        }
        return overviews
    }

    private func check(_ name: String) throws(QueueError) {
        guard queue.catalog.queues.contains(name) else {
            throw QueueError(.unknownQueue, "unknown queue '\(name)' (queues in jobs/: \(queue.catalog.queues.joined(separator: ", ")))")
        }
    }
}
