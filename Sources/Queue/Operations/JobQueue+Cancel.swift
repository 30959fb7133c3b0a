import Redis

/// Where a cancelled job was.
public enum CancelResult: Sendable, Equatable {
    /// Waiting on its queue: it never runs (a worker that reads its entry drops it unrun).
    case queued
    /// Delayed: taken out of the delayed set.
    case scheduled
    /// Waiting for a retry.
    case retrying
    /// Running in process `process`: it was told to cancel the job's task (within about a second); the job is
    /// recorded as cancelled when the task ends, unless it succeeded first. No later delivery runs it.
    case running(process: String)
}

extension JobQueue {
    /// Cancels a job atomically (`cancel.lua`): a queued, delayed or retrying job never runs and is recorded as
    /// `cancelled` (its unique key released); a running one has its task cancelled through the worker that holds it.
    /// Throws `QueueError.notFound` for no such job and `.alreadyFinished` for one that succeeded, failed or was
    /// cancelled already.
    public func cancel(_ id: JobID) async throws -> CancelResult {
        await syncShardsIfStale()
        let queues = allShards
        let replies = try await redis.pipeline(queues.map { ["HGET", keys($0).job(id), JobField.kind.rawValue] })
        var call: CancelCall?
        for (queue, reply) in zip(queues, replies) {
            guard let kind = reply.string else { continue }
            call = CancelCall(keys(queue), id: id.rawValue, retentionMs: retention(of: kind), carried: nil)
            break
        }
        if call == nil, let found = try await streamEntry(of: id) {
            let kind = found.fields[JobField.kind.rawValue] ?? ""
            call = CancelCall(
                keys(found.queue), id: id.rawValue, retentionMs: retention(of: kind), carried: (found.entry, found.fields))
        }
        guard let call, let answer = try await redis.run(call).string else {
            throw QueueError(.notFound, "no job \(id) (unknown, or expired by retention)")
        }
        let parts = answer.split(separator: " ", maxSplits: 1).map(String.init)
        switch parts[0] {
        case "scheduled": return .scheduled
        case "retrying": return .retrying
        case "running":
            let process = parts.count > 1 ? parts[1] : ""
            if !process.isEmpty { try await ProcessRegistry(queue: self).send(.cancel(id), toExactly: process) }
            return .running(process: process)
        case "finished":
            throw QueueError(.alreadyFinished, "job \(id) already finished (\(parts.count > 1 ? parts[1] : "done"))")
        default: return .queued
        }
    }

    /// How long a cancelled job's record is kept: its kind's retention of failed jobs.
    private func retention(of kind: String) -> Int64 {
        (catalog[kind]?.retention.failed ?? .seconds(7 * 86_400)).milliseconds
    }
}
