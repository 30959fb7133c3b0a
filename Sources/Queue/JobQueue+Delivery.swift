import Foundation
import Redis
import Synchronization

/// A job handed to a worker: it holds the lease until its outcome is recorded.
public struct ReservedJob: Sendable {
    public let id: JobID
    public let queue: String
    /// The stream entry of this delivery; the outcome is accepted only for the delivery that holds the job.
    public let entry: String
    public let kind: String
    public let payload: String
    public let attempt: Int
    public let maxAttempts: Int
    public let scheduledFor: Date?
    public let enqueuedAt: Date
    /// Its last lease ran out (its worker crashed, was killed or hung): it runs alone, and the worker that has it
    /// takes no other job until it ends, so a job that crashes its worker takes nothing else down with it.
    public let isolated: Bool
    /// It was not started by its `start_by` time and has already ended `expired`: the worker does not run it, only
    /// reports its end.
    public let expired: Bool
    /// The trace context its producer carried (``JobField/trace``): its run is a span of that trace.
    public var traceContext: String? = nil
    /// Its record was written whole by this delivery's start (a first delivery of a job enqueued without one): it
    /// holds only the delivery's fields, so recording the outcome need not read it (finish.lua).
    var plainRecord = false
}

/// The outcome of one delivery, recorded in batches.
public struct JobOutcome: Sendable {
    enum Kind: String, Sendable {
        case succeeded = "ok"
        case retry
        case dead
        case requeue
        case postpone = "wait"
        case cancel
    }

    let job: ReservedJob
    let kind: Kind
    let text: String
    let milliseconds: Int64

    public static func succeeded(_ job: ReservedJob, result: String?, retention: Duration) -> JobOutcome {
        JobOutcome(job: job, kind: .succeeded, text: result ?? "null", milliseconds: retention.milliseconds)
    }
    public static func retry(_ job: ReservedJob, error: String, after delay: Duration) -> JobOutcome {
        JobOutcome(job: job, kind: .retry, text: error, milliseconds: max(0, delay.milliseconds))
    }
    public static func dead(_ job: ReservedJob, error: String, retention: Duration) -> JobOutcome {
        JobOutcome(job: job, kind: .dead, text: error, milliseconds: retention.milliseconds)
    }
    /// A dependency was unreachable: retried after `delay` (doubled per outage in a row, up to 30 s) and the
    /// attempt does not count.
    public static func postpone(_ job: ReservedJob, error: String, after delay: Duration) -> JobOutcome {
        JobOutcome(job: job, kind: .postpone, text: error, milliseconds: max(1, delay.milliseconds))
    }
    /// Cancelled by an operator while it ran: recorded as `cancelled`, kept `retention`.
    public static func cancelled(_ job: ReservedJob, retention: Duration) -> JobOutcome {
        JobOutcome(job: job, kind: .cancel, text: "", milliseconds: retention.milliseconds)
    }
    /// Handed back unfinished at shutdown: runnable again at once, and the attempt does not count.
    public static func requeue(_ job: ReservedJob) -> JobOutcome {
        JobOutcome(job: job, kind: .requeue, text: "", milliseconds: 0)
    }
}

extension JobQueue {
    private var deadSet: DeadSetBounds {
        DeadSetBounds(
            retentionMs: options.deadSetMaxAge.milliseconds, cap: options.deadSetCap, maxAgeMs: options.deadSetMaxAge.milliseconds)
    }

    /// Creates the consumer group of each queue (from the stream's start, so nothing enqueued earlier is missed),
    /// and registers `consumer` in it so operators see an idle worker too.
    public func prepare(queues: [String], consumer: String? = nil) async throws {
        for queue in queues {
            do {
                try await redis.send(["XGROUP", "CREATE", keys(queue).stream, QueueKeys.group, "0", "MKSTREAM"])
            } catch let error as RedisError where error.message.hasPrefix("BUSYGROUP") {}
            if let consumer {
                try await redis.send(["XGROUP", "CREATECONSUMER", keys(queue).stream, QueueKeys.group, consumer])
            }
        }
    }

    /// Runs `body`; when Redis answers `NOGROUP` (it lost a stream and its group: restarted without persistence, or
    /// failed over to an empty replica), makes the groups of `queues` again and runs `body` once more. Without
    /// this a worker would fail every read for good, since the groups are otherwise made only at start-up.
    func recreatingGroups<T>(_ queues: [String], _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RedisError where error.isMissingGroup {
            try await prepare(queues: queues)
            return try await body()
        }
    }

    /// Removes a stopped worker's consumer from the groups where it holds nothing (nothing is lost: a consumer
    /// with pending entries is kept until they are reclaimed).
    public func unregister(consumer: String, queues: [String]) async {
        for queue in queues {
            let stream = keys(queue).stream
            let pending = try? await redis.send(["XPENDING", stream, QueueKeys.group, "-", "+", "1", consumer])
            if pending?.array?.isEmpty == true {
                _ = try? await redis.send(["XGROUP", "DELCONSUMER", stream, QueueKeys.group, consumer])
            }
        }
    }

    /// Takes up to `count` runnable jobs of `queue` without blocking, in one round-trip. `idle`: the caller has
    /// nothing in flight, so it may be given a job to run isolated (`ReservedJob.isolated`).
    public func reserve(queue: String, count: Int, consumer: String, idle: Bool = true) async throws -> [ReservedJob] {
        let k = keys(queue)
        let reply = try await recreatingGroups([queue]) {
            try await redis.run(ReserveCall(k, consumer: consumer, count: count, dead: deadSet, idle: idle))
        }
        return Self.decodeJobs(reply, queue: queue)
    }

    /// Waits up to `timeout` for jobs on any of `queues` (a blocking `XREADGROUP` through `connections`), then starts
    /// at most `count` of them, and at most `limits[queue]` of a queue's. Returns the jobs started, each also passed to
    /// `started` as soon as it started.
    ///
    /// `XREADGROUP`'s COUNT bounds each stream, not the read: COUNT n over k streams could deliver n·k entries, and a
    /// worker took up to its concurrency times its number of queues at once. Each stream is asked for an equal share
    /// (at least one), and what a read still delivers past `count` (only when fewer slots are free than queues are
    /// read, or past a queue's limit) goes straight back to the end of its stream, unstarted. `limits` is asked when the
    /// first reply comes (the worker takes its permits across processes there: ``GlobalLimits``), so a limit lowered
    /// during the wait already holds.
    ///
    /// On a Redis Cluster each queue is read on its own connection, all at once; the first read to deliver wakes the
    /// others (`CLIENT UNBLOCK` on their nodes). Each read's jobs start as it returns: the first read's go to `started`
    /// while the others are still being unblocked, and what those delivered meanwhile is started or handed back too.
    public func waitForJobs(
        queues: [String], count: Int, consumer: String, timeout: Duration, connections: FetchConnections, idle: Bool = true,
        limits: () async throws -> [String: Int] = { [:] }, started: ([ReservedJob]) -> Void = { _ in }
    ) async throws -> [ReservedJob] {
        let share = max(1, count / max(1, queues.count))
        var budget: StartBudget?
        func deliver(_ reply: [RedisValue]) async throws {
            var current: StartBudget
            if let budget { current = budget } else { current = StartBudget(room: count, rooms: try await limits(), idle: idle) }
            let jobs = try await start(reply, queues: queues, consumer: consumer, budget: &current)
            budget = current
            if !jobs.isEmpty { started(jobs) }
        }
        if queues.count > 1, try await redis.isCluster {
            try await readFirst(queues, share: share, consumer: consumer, timeout: timeout, connections: connections, deliver: deliver)
        } else {
            let connection = connections.connection(for: queues.count > 1 ? nil : queues.first)
            try await deliver(try await read(queues, share: share, consumer: consumer, timeout: timeout, on: connection))
        }
        return budget?.jobs ?? []
    }

    /// One blocking `XREADGROUP` over `queues`' streams: one reply per stream that delivered.
    private func read(_ queues: [String], share: Int, consumer: String, timeout: Duration, on connection: BlockingConnection)
        async throws -> [RedisValue]
    {
        let streams = queues.map { keys($0).stream }
        let reply = try await recreatingGroups(queues) {
            try await connection.send(
                [
                    "XREADGROUP", "GROUP", QueueKeys.group, consumer, "COUNT", String(share), "BLOCK", String(timeout.milliseconds),
                    "STREAMS",
                ]
                    + streams + Array(repeating: ">", count: streams.count),
                blockFor: timeout)
        }
        return reply.array ?? []
    }

    /// A read per queue at once, each reply handed to `deliver` as it returns. Once one delivers or fails, the others
    /// are unblocked, those still waiting only, all at once, and again every millisecond until they return (a read not
    /// yet blocked on its server misses an unblock; a retry every 10 ms, one node after another, put the pickup p99 of
    /// a 6-shard queue at 20–27 ms). Fails only when no read delivered.
    private func readFirst(
        _ queues: [String], share: Int, consumer: String, timeout: Duration, connections: FetchConnections,
        deliver: ([RedisValue]) async throws -> Void
    ) async throws {
        let waiting = WaitingReads(queues)
        let (delivered, failure) = await withTaskGroup(of: FinishedRead.self) { group in
            for queue in queues {
                let connection = connections.connection(for: queue)
                group.addTask {
                    do {
                        return FinishedRead(
                            queue: queue,
                            replies: try await self.read([queue], share: share, consumer: consumer, timeout: timeout, on: connection))
                    } catch {
                        return FinishedRead(queue: queue, failure: error)
                    }
                }
            }
            var delivered = false
            var failure: (any Error)?
            var waker: Task<Void, Never>?
            while let read = await group.next() {
                waiting.queues.withLock { _ = $0.remove(read.queue) }
                failure = failure ?? read.failure
                if waker == nil && (!read.replies.isEmpty || failure != nil) {
                    waker = Task {
                        while !Task.isCancelled {
                            await connections.unblock(queues: waiting.queues.withLock { $0 })
                            try? await Task.sleep(for: .milliseconds(1))
                        }
                    }
                }
                guard !read.replies.isEmpty else { continue }
                do {
                    try await deliver(read.replies)
                    delivered = true
                } catch {
                    failure = failure ?? error
                }
            }
            waker?.cancel()
            return (delivered, failure)
        }
        if !delivered, let failure { throw failure }
    }

    /// What one queue's read returned.
    private struct FinishedRead: Sendable {
        let queue: String
        var replies: [RedisValue] = []
        var failure: (any Error)?
    }

    /// The queues whose reads have not returned yet.
    private final class WaitingReads: Sendable {
        let queues: Mutex<Set<String>>
        init(_ queues: [String]) { self.queues = Mutex(Set(queues)) }
    }

    /// What the reads of one wait may still start: free slots, each limited queue's room (shared by its shards), and
    /// the jobs started so far.
    private struct StartBudget {
        var room: Int
        var rooms: [String: Int]
        let idle: Bool
        var jobs: [ReservedJob] = []
    }

    /// Starts (or hands back, past the budget's slots or a queue's room) what a read delivered; returns the jobs it
    /// started, also added to the budget's.
    private func start(_ reply: [RedisValue], queues: [String], consumer: String, budget: inout StartBudget) async throws
        -> [ReservedJob]
    {
        var jobs: [ReservedJob] = []
        for streamReply in reply {
            guard let parts = streamReply.array, parts.count == 2, let name = parts[0].string,
                let queue = queues.first(where: { keys($0).stream == name })
            else { continue }
            // Per entry: its id, the job's id, and the job it carries (kind, payload, max, vis; kind empty when the
            // entry only names a job whose record exists).
            // Once a job to run isolated is given, the rest of this wait's reads goes back to the streams.
            let mode: StartCall.Mode =
                budget.jobs.contains(where: \.isolated) ? .handBack : budget.idle && budget.jobs.isEmpty ? .idle : .busy
            var call = StartCall(keys(queue), consumer: consumer, dead: deadSet, mode: mode)
            var surplus = StartCall(keys(queue), consumer: consumer, dead: deadSet, mode: .handBack)
            let limited = QueueShards.queue(ofShard: queue)
            var queueRoom = budget.rooms[limited] ?? Int.max
            for entry in parts[1].array ?? [] {
                guard let e = entry.array, e.count == 2, let entryID = e[0].string, let fields = e[1].fields,
                    let id = fields[JobField.id.rawValue]?.string
                else { continue }
                if budget.room > 0 && queueRoom > 0 {
                    call.add(entry: entryID, id: id, carried: fields)
                    budget.room -= 1
                    queueRoom -= 1
                } else {
                    surplus.add(entry: entryID, id: id, carried: fields)
                }
            }
            if budget.rooms[limited] != nil { budget.rooms[limited] = queueRoom }
            if !surplus.isEmpty { try await redis.run(surplus) }
            guard !call.isEmpty else { continue }
            let started = Self.decodeJobs(try await redis.run(call), queue: queue)
            budget.jobs += started
            jobs += started
        }
        return jobs
    }

    private static func decodeJobs(_ reply: RedisValue, queue: String) -> [ReservedJob] {
        guard let flat = reply.array else { return [] }
        var jobs: [ReservedJob] = []
        jobs.reserveCapacity(flat.count / 10)
        var i = 0
        while i + 9 < flat.count {
            let fire = flat[i + 6].string.flatMap(Double.init)
            jobs.append(
                ReservedJob(
                    id: JobID(trusted: flat[i].string ?? ""), queue: queue, entry: flat[i + 1].string ?? "",
                    kind: flat[i + 2].string ?? "", payload: flat[i + 3].string ?? "", attempt: flat[i + 4].int ?? 1,
                    maxAttempts: flat[i + 5].int ?? 1, scheduledFor: fire.map { Date(timeIntervalSince1970: $0 / 1000) },
                    enqueuedAt: Date(timeIntervalSince1970: (flat[i + 7].string.flatMap(Double.init) ?? 0) / 1000),
                    isolated: flat[i + 8].string == "1", expired: flat[i + 8].string == "e",
                    traceContext: flat[i + 9].string.flatMap { $0.isEmpty ? nil : $0 }, plainRecord: flat[i + 8].string == "p"))
            i += 10
        }
        return jobs
    }

    /// Records outcomes: one script call per queue for the whole batch.
    public func record(_ outcomes: [JobOutcome]) async throws {
        for (queue, batch) in Dictionary(grouping: outcomes, by: \.job.queue) {
            var call = FinishCall(
                keys(queue), deadSetCap: options.deadSetCap, deadSetMaxAgeMs: options.deadSetMaxAge.milliseconds, count: batch.count)
            for outcome in batch { call.add(outcome) }
            try await redis.run(call)
        }
    }

    /// Renews the leases of jobs still running here (resets their idle time in the stream's pending list).
    /// Returns the entries this consumer no longer holds (its lease ran out and another worker got the job).
    public func heartbeat(_ jobs: [ReservedJob], consumer: String) async throws -> Set<String> {
        var lost = Set<String>()
        for (queue, batch) in Dictionary(grouping: jobs, by: \.queue) {
            let entries = batch.map(\.entry)
            let reply = try await recreatingGroups([queue]) {
                try await redis.send(["XCLAIM", keys(queue).stream, QueueKeys.group, consumer, "0"] + entries + ["JUSTID"])
            }
            let kept = Set((reply.array ?? []).compactMap(\.string))
            lost.formUnion(entries.filter { !kept.contains($0) })
        }
        return lost
    }

    /// Moves due delayed jobs and retries onto their streams. Returns how many moved and how long until the next is due.
    public func promoteDueJobs(queue: String, limit: Int = 1000) async throws -> (moved: Int, nextDue: Duration?) {
        let reply = try await redis.run(PromoteCall(keys(queue), limit: limit))
        let parts = reply.array ?? []
        let next = parts.count > 1 ? parts[1].int ?? -1 : -1
        return (parts.first?.int ?? 0, next < 0 ? nil : .milliseconds(next))
    }

    /// Hands back jobs whose lease ran out. Returns their ids. Also forgets consumers that hold nothing and were not
    /// seen for `forgetConsumersAfter` (workers killed without a shutdown): a live worker reads every few seconds.
    public func reclaimExpiredLeases(
        queue: String, limit: Int = 500, forgetConsumersAfter: Duration = .seconds(3600)
    ) async throws -> [JobID] {
        let k = keys(queue)
        let owner = QueueShards.queue(ofShard: queue)
        let minimum = catalog.kinds.values.filter { $0.queue == owner }.map(\.visibilityTimeout).min() ?? .seconds(30)
        let reply = try await recreatingGroups([queue]) {
            try await redis.run(
                ReclaimCall(
                    k, minimumIdleMs: minimum.milliseconds, limit: limit, consumerIdleMs: forgetConsumersAfter.milliseconds))
        }
        return (reply.array ?? []).compactMap { $0.string.map(JobID.init(trusted:)) }
    }
}
