import Durations
import Foundation
import JSON
import Logging
import Redis
import Traces

/// Options of the queue engine as a whole.
public struct QueueOptions: Sendable {
    /// Key prefix; every key is `prefix:{queue}:…`.
    public var prefix: String
    /// Dead jobs kept per queue; the oldest are dropped past it.
    public var deadSetCap: Int
    /// Dead jobs older than this are dropped.
    public var deadSetMaxAge: Duration
    /// When set, an enqueue succeeds only once this many replicas have it (`WAIT` after the write, on its connection):
    /// a master failing over right after it then loses nothing acknowledged. Past the timeout the enqueue throws
    /// `RedisError.Code.notReplicated` though the job was written (a retry with a unique key is safe). Nil: off.
    public var durability: Durability?

    public init(prefix: String = "carbscan", deadSetCap: Int = 10_000, deadSetMaxAge: Duration = .seconds(30 * 86_400)) {
        self.prefix = prefix
        self.deadSetCap = deadSetCap
        self.deadSetMaxAge = deadSetMaxAge
    }
}

/// How to enqueue one job.
public struct EnqueueOptions: Sendable {
    /// Wait this long in Redis before the job becomes runnable.
    public var delay: Duration?
    /// Overrides the kind's uniqueness key: a second job with the same key is not enqueued while the key lives.
    public var uniqueKey: String?
    /// How long `uniqueKey` holds (default: the kind's uniqueness TTL, else 24 h).
    public var uniqueTTL: Duration?
    /// Who the job belongs to (an opaque id, e.g. a user's): kept in its record so a reader can check ownership.
    /// A job with an owner is always `indexed`.
    public var owner: String?
    /// Writes the job's record at enqueue, so `JobQueue.record(_:)` finds it while it waits (a reader that polls
    /// the job it just enqueued needs this). Jobs with an owner, a unique key, a delay or a cron fire always have a
    /// record from the start. Any other job is only its stream entry until a worker starts it and writes the record:
    /// one `XADD` per job instead of a transaction of two commands, about twice the bulk enqueue rate.
    public var indexed: Bool
    /// The job's id, chosen by the producer (e.g. written to a transactional outbox with the rows that need the job):
    /// enqueuing it again while its record lives (waiting, running, or kept for its retention) is a no-op that answers
    /// `.duplicate(of:)` itself, so a relay that delivers an outbox row twice makes one job. Nil: a fresh random id.
    public var id: JobID?
    /// What the job holds while it runs (e.g. `scan:42`, one scan of a user's quota): an opaque text the queue keeps
    /// in the job's record and hands to the ``ReservationLedger`` once, as the job ends: to charge when it succeeded,
    /// to release when it died, was cancelled or ran out of attempts. Recorded in the same script that records the
    /// outcome (``JobQueue/settlements(queue:limit:)``).
    public var reservation: String?
    /// Set by the scheduler: this enqueue is the fire of `cron` at `fireTime`, done at most once.
    var cron: CronFire?

    public init(
        delay: Duration? = nil, uniqueKey: String? = nil, uniqueTTL: Duration? = nil, owner: String? = nil, indexed: Bool = false,
        id: JobID? = nil, reservation: String? = nil
    ) {
        self.id = id
        self.reservation = reservation
        self.delay = delay
        self.uniqueKey = uniqueKey
        self.uniqueTTL = uniqueTTL
        self.owner = owner
        self.indexed = indexed
    }

    struct CronFire: Sendable {
        var name: String
        var fireTime: Date
        var catchUp: Bool
    }
}

/// What happened to an enqueue.
public enum EnqueueResult: Sendable, Equatable {
    case enqueued(JobID)
    /// The uniqueness key is held by this job: nothing was enqueued.
    case duplicate(of: JobID?)
    /// A cron fire that another scheduler (or an earlier run) already did.
    case alreadyFired

    public var id: JobID? {
        if case .enqueued(let id) = self { return id }
        return nil
    }

    /// The job that stands for this enqueue: the new one, or the one holding the unique key (a webhook re-sent).
    public var jobID: JobID? {
        switch self {
        case .enqueued(let id): id
        case .duplicate(let id): id
        case .alreadyFired: nil
        }
    }
}

/// Refusals at enqueue and for operator commands: bad input, never a server fault.
public struct QueueError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable {
        case unknownKind, invalidPayload, notFound, notRetryable
        /// No kind of the catalog uses the queue named.
        case unknownQueue
        /// A cancel of a job that already succeeded, failed or was cancelled.
        case alreadyFinished
        /// A process id prefix that several live processes share.
        case ambiguous
    }
    public let code: Code
    public let message: String
    public var description: String { message }

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// The queue engine: Redis-backed, at-least-once. Knows job kinds only through the catalog (`jobs/*.yml`).
public final class JobQueue: Sendable {
    public let redis: RedisClient
    public let catalog: JobCatalog
    public let options: QueueOptions

    let shardMap: ShardMap

    public init(redis: RedisClient, catalog: JobCatalog, options: QueueOptions = .init()) {
        self.redis = redis
        self.catalog = catalog
        self.options = options
        self.shardMap = ShardMap(catalog: catalog)
    }

    public func keys(_ queue: String) -> QueueKeys { QueueKeys(prefix: options.prefix, queue: queue) }

    /// The Redis queues that hold `queue`'s jobs: itself, or its shards (every one ever used; see ``QueueShards``).
    public func shards(of queue: String) -> [String] { shardMap.readable(queue) }

    /// Every Redis queue of every queue: what upkeep, look-ups and counts cover.
    public var allShards: [String] { catalog.queues.flatMap { shardMap.readable($0) } }

    /// Records this process's shard counts in Redis and learns the largest ever used (a smaller count configured now
    /// still reads the shards a larger one filled). True when the shards to read changed.
    @discardableResult
    public func syncShards() async throws -> Bool {
        try await shardMap.sync(redis: redis, key: shardsKey)
    }

    /// ``syncShards()`` unless done in the last 5 s: called first by what reads every shard.
    func syncShardsIfStale() async { await shardMap.syncIfStale(redis: redis, key: shardsKey) }

    private var shardsKey: String { "\(options.prefix):shards" }

    func spec(_ kind: String) throws(QueueError) -> JobKindSpec {
        guard let spec = catalog[kind] else {
            let known = catalog.kinds.keys.sorted().joined(separator: ", ")
            throw QueueError(.unknownKind, "unknown job kind '\(kind)' (known: \(known))")
        }
        return spec
    }

    // MARK: Enqueue

    /// Enqueues one job after checking its kind and payload. Returns its id, or why nothing was enqueued. One job goes
    /// straight to its path, without the batch's grouping (the one-by-one producer's figure is one round trip plus this).
    public func enqueue(_ kind: String, payload: JSONValue, options: EnqueueOptions = .init()) async throws -> EnqueueResult {
        if TraceSwitch.isOn {
            // Inside a trace the sampler dropped (where no span is current), the job only carries its context (its run
            // is dropped too): the first question, one task-local read, asked of 9 requests in 10 at 10% sampling.
            if let dropped = CurrentTrace.dropped {
                return try await enqueueOne(
                    kind, payload: payload, options: options, id: options.id ?? .random(), trace: dropped.travelling)
            }
            let inTrace = TraceCarrier.inTrace
            // In a context whose span is not sampled, the same.
            if inTrace, !TraceSwitch.inSampledTrace {
                return try await enqueueOne(
                    kind, payload: payload, options: options, id: options.id ?? .random(), trace: TraceCarrier.current())
            }
            // Outside any trace the job starts one; dropped, it carries only that (its run is dropped too).
            if !inTrace, let decision = TraceSwitch.decide(traceparent: nil, tracestate: nil) {
                switch decision {
                case .dropped(let dropped):
                    return try await enqueueOne(
                        kind, payload: payload, options: options, id: options.id ?? .random(), trace: dropped.travelling)
                case .sampled(let root):
                    return try await InstrumentationContext.$current.withValue(root.context) {
                        try await tracedEnqueue(kind, payload: payload, options: options)
                    }
                }
            }
            return try await tracedEnqueue(kind, payload: payload, options: options)
        }
        return try await enqueueOne(kind, payload: payload, options: options, id: options.id ?? .random())
    }

    func enqueueOne(
        _ kind: String, payload: JSONValue, options: EnqueueOptions, id: JobID, trace: String? = nil
    ) async throws -> EnqueueResult {
        var job = try prepare(kind, payload: payload, options: options, index: 0, id: id)
        job.trace = trace
        var results = [EnqueueResult.alreadyFired]
        try await write([job], queue: job.queue, path: job.path, into: &results)
        return results[0]
    }

    /// Enqueues one job of `contract`'s kind: its parameters, as ``JobContract/payload(_:)`` writes them, are the
    /// payload, checked against the kind's schema like any other.
    public func enqueue<C: JobContract>(
        _ contract: C.Type, _ parameters: C.Parameters, options: EnqueueOptions = .init()
    ) async throws -> EnqueueResult {
        try await enqueue(C.name, payload: C.payload(parameters), options: options)
    }

    /// Enqueues many jobs of `contract`'s kind in one batch: as with the untyped batch, one bad payload refuses them all.
    public func enqueue<C: JobContract>(
        _ contract: C.Type, _ jobs: [(parameters: C.Parameters, options: EnqueueOptions)]
    ) async throws -> [EnqueueResult] {
        try await enqueue(jobs.map { (C.name, try C.payload($0.parameters), $0.options) })
    }

    /// Enqueues many jobs, per queue: plain ones as one `XADD` each (one pipeline per 10,000), indexed ones in
    /// `MULTI`/`EXEC` blocks of 100, those with a unique key, a delay or a cron fire time through the enqueue script
    /// (one call per 1,000). Every payload is checked before anything is written: one bad job refuses the whole batch.
    public func enqueue(_ jobs: [(kind: String, payload: JSONValue, options: EnqueueOptions)]) async throws -> [EnqueueResult] {
        var prepared: [PreparedJob] = []
        prepared.reserveCapacity(jobs.count)
        let ids = JobID.random(count: jobs.count)
        for (index, job) in jobs.enumerated() {
            prepared.append(
                try prepare(job.kind, payload: job.payload, options: job.options, index: index, id: job.options.id ?? ids[index]))
        }
        var results = [EnqueueResult](repeating: .alreadyFired, count: jobs.count)
        // Grouped by queue as positions, not copies (a bulk of 100,000 spent an eighth of its time copying jobs).
        var groups: [String: [PreparedJob.Path: [Int]]] = [:]
        for (position, job) in prepared.enumerated() { groups[job.queue, default: [:]][job.path, default: []].append(position) }
        for (queue, paths) in groups {
            for (path, positions) in paths {
                let chunkSize = path == .scripted ? 1000 : 10_000
                for start in stride(from: 0, to: positions.count, by: chunkSize) {
                    let chunk = positions[start..<min(start + chunkSize, positions.count)].map { prepared[$0] }
                    try await write(chunk, queue: queue, path: path, into: &results)
                }
            }
        }
        return results
    }

    /// Checks that `kind` is in the catalog and `payload` matches its schema, as an enqueue does, without enqueuing:
    /// for a producer that writes the job somewhere first (a transactional outbox) and must refuse bad input there.
    public func validate(_ kind: String, payload: JSONValue) throws {
        _ = try checkedSpec(kind, payload: payload)
    }

    private func checkedSpec(_ kind: String, payload: JSONValue) throws -> JobKindSpec {
        let spec = try spec(kind)
        let violations = spec.payloadSchema.validate(payload)
        if !violations.isEmpty {
            let list = violations.map(\.description).joined(separator: "; ")
            throw QueueError(.invalidPayload, "payload of '\(kind)' does not match jobs/\(kind).yml: \(list)")
        }
        return spec
    }

    /// Checks a job's kind and payload and settles its unique key: what goes into Redis, or why nothing may.
    private func prepare(_ kind: String, payload: JSONValue, options: EnqueueOptions, index: Int, id: JobID) throws -> PreparedJob {
        let spec = try checkedSpec(kind, payload: payload)
        var uniqueKey = options.uniqueKey
        var uniqueTTL = options.uniqueTTL
        if uniqueKey == nil, let uniqueness = spec.uniqueness {
            uniqueKey = uniqueness.key(for: payload)
            uniqueTTL = uniqueTTL ?? uniqueness.ttl
        }
        // A fair job waits in its lane: a user's jobs all on one shard, whose window is its share of the queue's.
        let lane = spec.fairness.map { FairLane(spec: spec, payload: payload, shards: shardMap.producerCount(of: spec.queue), $0) }
        return PreparedJob(
            index: index, id: id, kind: spec.name,
            queue: shardMap.shard(of: spec.queue, key: uniqueKey ?? options.cron?.name ?? lane?.name),
            maxAttempts: spec.maxAttempts,
            visibilityMs: spec.visibilityTimeout.milliseconds, payload: payload.jsonString, options: options,
            uniqueKey: uniqueKey, uniqueTTL: uniqueTTL, eventsMs: spec.eventsLifetime?.milliseconds ?? 0,
            startByMs: spec.startBy?.milliseconds ?? 0, lane: lane)
    }

    /// Writes jobs of one queue that go in by one path.
    private func write(_ jobs: [PreparedJob], queue: String, path: PreparedJob.Path, into results: inout [EnqueueResult]) async throws {
        switch path {
        case .entry: try await enqueueEntries(jobs, queue: queue, into: &results)
        case .transaction: try await enqueueIndexed(jobs, queue: queue, into: &results)
        case .scripted: try await enqueueScripted(jobs, queue: queue, into: &results)
        }
    }

    /// A checked job on its way into Redis.
    struct PreparedJob {
        var index: Int
        var id: JobID
        // The kind's figures, not its whole spec: a bulk copies each job a few times.
        var kind: String
        var queue: String
        var maxAttempts: Int
        var visibilityMs: Int64
        var payload: String
        var options: EnqueueOptions
        var uniqueKey: String?
        var uniqueTTL: Duration?
        /// The event log's lifetime (`events: true`), 0 for none.
        var eventsMs: Int64
        /// `start_by:`, 0 for none.
        var startByMs: Int64
        /// The producer's trace context (``JobField/trace``), kept in the record for every attempt's span.
        var trace: String? = nil
        /// Its fair lane, for a kind with `fair:`.
        var lane: FairLane? = nil

        enum Path { case entry, transaction, scripted }

        /// How it goes in: nothing to decide on the server (no unique key, delay or cron fire) and no record needed
        /// while it waits: a stream entry that carries the job; a record needed too: a transaction writes both;
        /// else the enqueue script.
        var path: Path {
            if uniqueKey != nil || (options.delay ?? .zero) > .zero || options.cron != nil || options.id != nil
                || options.reservation != nil || eventsMs > 0 || startByMs > 0 || lane != nil
            {
                return .scripted
            }
            return options.indexed || !(options.owner ?? "").isEmpty || trace != nil ? .transaction : .entry
        }
    }

    /// Plain jobs no one reads while they wait: one `XADD` each whose entry carries the job (id, kind, payload, max
    /// attempts, visibility; the entry id is its enqueue time on Redis's clock), in one pipeline; the start script
    /// writes the record from it. An `XADD` is atomic on its own, so no transaction: Redis spent about 5 µs per job on
    /// the transaction of a record and an entry, and the producer formatted 16 arguments per job instead of 12.
    private func enqueueEntries(_ jobs: [PreparedJob], queue: String, into results: inout [EnqueueResult]) async throws {
        let stream = keys(queue).stream
        let replies = try await redis.pipeline(
            jobs.map {
                Self.entryCommand(
                    stream, id: $0.id, kind: $0.kind, payload: $0.payload, maxAttempts: $0.maxAttempts, visibilityMs: $0.visibilityMs)
            }, durability: options.durability)
        for case .error(let message) in replies { throw RedisError(.server, "enqueue failed: \(message)") }
        for job in jobs { results[job.index] = .enqueued(job.id) }
    }

    private static func entryCommand(
        _ stream: String, id: JobID, kind: String, payload: String, maxAttempts: Int, visibilityMs: Int64
    ) -> [String] {
        [
            "XADD", stream, "*", JobField.id.rawValue, id.rawValue, JobField.kind.rawValue, kind, JobField.payload.rawValue, payload,
            JobField.maxAttempts.rawValue, String(maxAttempts), JobField.visibilityMs.rawValue, String(visibilityMs),
        ]
    }

    /// The command that enqueues one plain job of `kind` with `payload` (a fresh id each call): the queue benchmark
    /// has `redis-benchmark` repeat it, to measure what Redis's own work on the entry costs.
    package func entryCommand(kind: String, payload: String) throws(QueueError) -> [String] {
        let spec = try spec(kind)
        return Self.entryCommand(
            keys(shardMap.shard(of: spec.queue, key: nil)).stream, id: .random(), kind: spec.name, payload: payload,
            maxAttempts: spec.maxAttempts,
            visibilityMs: spec.visibilityTimeout.milliseconds)
    }

    /// Plain jobs with a record from the start (indexed, or with an owner): their records and stream entries in
    /// `MULTI`/`EXEC` blocks of 100 jobs, with no script, all in one pipeline (the connection sends as it formats, so
    /// Redis runs a block while the next is being written). Redis spent 12 µs per job in the enqueue script against
    /// about 5 in a transaction; the enqueue time is the producer's clock here (the script reads the server's).
    private func enqueueIndexed(_ jobs: [PreparedJob], queue: String, into results: inout [EnqueueResult]) async throws {
        let keys = keys(queue)
        let now = String(Int64(Date().timeIntervalSince1970 * 1000))
        var commands: [[String]] = []
        commands.reserveCapacity(jobs.count * 2 + (jobs.count / 100 + 1) * 2)
        for (position, job) in jobs.enumerated() {
            if position % 100 == 0 { commands.append(["MULTI"]) }
            var record = [
                "HSET", keys.job(job.id), JobField.kind.rawValue, job.kind, JobField.payload.rawValue, job.payload,
                JobField.maxAttempts.rawValue, String(job.maxAttempts), JobField.visibilityMs.rawValue, String(job.visibilityMs),
                JobField.enqueuedMs.rawValue, now,
            ]
            if let owner = job.options.owner, !owner.isEmpty { record += [JobField.owner.rawValue, owner] }
            if let trace = job.trace { record += [JobField.trace.rawValue, trace] }
            commands.append(record)
            commands.append(["XADD", keys.stream, "*", JobField.id.rawValue, job.id.rawValue])
            if position % 100 == 99 || position == jobs.count - 1 { commands.append(["EXEC"]) }
        }
        let replies = try await redis.pipeline(commands, durability: options.durability)
        // Each block answers OK, QUEUED per command, then EXEC's array of the commands' replies.
        var failure: String?
        var executedCount = 0
        for reply in replies {
            switch reply {
            case .error(let message): failure = failure ?? message
            case .array(let executed):
                executedCount += executed.count
                for case .error(let message) in executed { failure = failure ?? message }
            default: break
            }
        }
        if failure == nil, executedCount != jobs.count * 2 { failure = "a transaction did not run" }
        if let failure { throw RedisError(.server, "enqueue transaction failed: \(failure)") }
        for job in jobs { results[job.index] = .enqueued(job.id) }
    }

    /// Jobs with a unique key, a delay or a cron fire time: the enqueue script decides on the server.
    private func enqueueScripted(_ jobs: [PreparedJob], queue: String, into results: inout [EnqueueResult]) async throws {
        var call = EnqueueCall(keys(queue), count: jobs.count)
        for job in jobs {
            call.add(
                id: job.id, kind: job.kind, payload: job.payload, maxAttempts: job.maxAttempts, visibilityMs: job.visibilityMs,
                delayMs: job.options.delay?.milliseconds ?? 0, uniqueKey: job.uniqueKey,
                uniqueTTLMs: (job.uniqueTTL ?? .seconds(86_400)).milliseconds,
                cron: job.options.cron.map { ($0.name, Int64($0.fireTime.timeIntervalSince1970 * 1000), $0.catchUp) },
                owner: job.options.owner, reservation: job.options.reservation, givenID: job.options.id != nil,
                eventsMs: job.eventsMs, startByMs: job.startByMs, trace: job.trace, lane: job.lane)
        }
        let reply = try await redis.run(EnqueueCall.script, keys: call.keys, arguments: call.arguments, durability: options.durability)
        for (job, answer) in zip(jobs, reply.array ?? []) {
            let text = answer.string ?? ""
            if text == "skip" {
                results[job.index] = .alreadyFired
            } else if text.hasPrefix("dup:") {
                results[job.index] = .duplicate(of: JobID(rawValue: String(text.dropFirst(4))))
            } else {
                results[job.index] = .enqueued(JobID(trusted: text))
            }
        }
    }

    // MARK: Operator views

    /// The job's record, looked up in every queue of the catalog. A job enqueued without `EnqueueOptions.indexed`
    /// has none until a worker starts it; `searchingStreams` then finds it (as queued) by reading every waiting job
    /// of every queue, as Sidekiq's `Queue#find_job` does: for operators, never on a request path.
    public func record(_ id: JobID, searchingStreams: Bool = false) async throws -> JobRecord? {
        await syncShardsIfStale()
        let queues = allShards
        let replies = try await redis.pipeline(
            queues.flatMap { queue in
                [["HGETALL", keys(queue).job(id)], ["ZSCORE", keys(queue).dead, id.rawValue]]
            })
        for (index, queue) in queues.enumerated() {
            guard let fields = replies[index * 2].fields, !fields.isEmpty else { continue }
            return JobRecord(
                id: id, queue: queue, fields: fields.compactMapValues(\.string), inDeadSet: !replies[index * 2 + 1].isNull)
        }
        guard searchingStreams, let found = try await streamEntry(of: id) else { return nil }
        var record = found.fields
        record[JobField.enqueuedMs.rawValue] = String(found.entry.prefix { $0 != "-" })
        return JobRecord(id: id, queue: found.queue, fields: record, inDeadSet: false)
    }

    /// The stream entry that carries job `id` (one enqueued without a record), found by reading every waiting job of
    /// every queue: for operators, never on a request path.
    func streamEntry(of id: JobID) async throws -> (queue: String, entry: String, fields: [String: String])? {
        for queue in allShards {
            let stream = keys(queue).stream
            var from = "-"
            while true {
                let entries = try await redis.send(["XRANGE", stream, from, "+", "COUNT", "1000"]).array ?? []
                for entry in entries {
                    guard let parts = entry.array, parts.count == 2, let entryID = parts[0].string, let fields = parts[1].fields,
                        fields[JobField.id.rawValue]?.string == id.rawValue, fields[JobField.kind.rawValue] != nil
                    else { continue }
                    return (queue, entryID, fields.compactMapValues(\.string))
                }
                guard entries.count == 1000, let last = entries.last?.array?.first?.string else { break }
                from = "(" + last
            }
        }
        return nil
    }

    /// Per-queue counts: what waits, runs, is delayed, retries, died, and monotonic totals.
    public struct QueueStats: Sendable, Codable, Equatable {
        public var queue: String
        public var queued: Int
        public var running: Int
        public var scheduled: Int
        public var retrying: Int
        public var dead: Int
        public var succeededTotal: Int
        public var failedTotal: Int
        public var retriedTotal: Int

        init(queue: String) {
            self = QueueStats(
                queue: queue, queued: 0, running: 0, scheduled: 0, retrying: 0, dead: 0, succeededTotal: 0, failedTotal: 0,
                retriedTotal: 0)
        }

        init(
            queue: String, queued: Int, running: Int, scheduled: Int, retrying: Int, dead: Int, succeededTotal: Int,
            failedTotal: Int, retriedTotal: Int
        ) {
            self.queue = queue
            self.queued = queued
            self.running = running
            self.scheduled = scheduled
            self.retrying = retrying
            self.dead = dead
            self.succeededTotal = succeededTotal
            self.failedTotal = failedTotal
            self.retriedTotal = retriedTotal
        }
    }

    /// Each queue's counts, its shards' added up.
    public func stats() async throws -> [QueueStats] {
        await syncShardsIfStale()
        let queues = allShards
        let replies = try await redis.pipeline(
            queues.flatMap { queue -> [[String]] in
                let k = keys(queue)
                return [
                    ["XLEN", k.stream], ["XINFO", "GROUPS", k.stream], ["ZCARD", k.scheduled], ["ZCARD", k.retry],
                    ["ZCARD", k.dead], ["HMGET", k.stats, "succeeded", "failed", "retried"], ["GET", k.lanesWaiting],
                ]
            })
        var byQueue: [String: QueueStats] = [:]
        for (index, shard) in queues.enumerated() {
            let r = Array(replies[index * 7..<index * 7 + 7])
            let stream = StreamCounts(length: r[0], groups: r[1])
            let totals = r[5].array ?? []
            let queue = QueueShards.queue(ofShard: shard)
            var sum = byQueue[queue] ?? QueueStats(queue: queue)
            sum.queued += stream.queued + (r[6].string.flatMap { Int($0) } ?? 0)
            sum.running += stream.running
            sum.scheduled += r[2].int ?? 0
            sum.retrying += r[3].int ?? 0
            sum.dead += r[4].int ?? 0
            sum.succeededTotal += totals.first?.int ?? 0
            sum.failedTotal += totals.dropFirst().first?.int ?? 0
            sum.retriedTotal += totals.dropFirst(2).first?.int ?? 0
            byQueue[queue] = sum
        }
        return catalog.queues.compactMap { byQueue[$0] }
    }

    /// Runs a waiting job now: from the dead set (with its attempts reset), the retry set or the delayed set.
    @discardableResult
    public func retryNow(_ id: JobID) async throws -> String {
        guard let record = try await record(id, searchingStreams: true) else { throw QueueError(.notFound, "no job \(id)") }
        let k = keys(record.queue)
        let reply = try await redis.run(RetryNowCall(k, id: id.rawValue))
        guard let from = reply.string else {
            throw QueueError(.notRetryable, "job \(id) is \(record.status.rawValue), not dead, retrying or delayed")
        }
        return from
    }

    /// The dead set of every queue, newest first.
    public func deadJobs(limit: Int = 100) async throws -> [JobRecord] {
        var records: [JobRecord] = []
        for queue in allShards {
            let ids = try await redis.send(["ZREVRANGE", keys(queue).dead, "0", String(limit - 1)]).array ?? []
            for value in ids {
                if let id = value.string.flatMap(JobID.init(rawValue:)), let record = try await record(id) {
                    records.append(record)
                }
            }
        }
        return records.sorted { ($0.finishedAt ?? .distantPast) > ($1.finishedAt ?? .distantPast) }.prefix(limit).map { $0 }
    }

    /// Retries every dead job; returns how many.
    public func retryAllDead() async throws -> Int {
        var count = 0
        for queue in allShards {
            let k = keys(queue)
            while true {
                let ids = try await redis.send(["ZRANGE", k.dead, "0", "499"]).array?.compactMap(\.string) ?? []
                if ids.isEmpty { break }
                for id in ids {
                    let reply = try await redis.run(RetryNowCall(k, id: id))
                    if reply.isNull { _ = try await redis.send(["ZREM", k.dead, id]) } else { count += 1 }
                }
            }
        }
        return count
    }

    /// Deletes a dead job for good.
    public func discardDead(_ id: JobID) async throws {
        for queue in allShards {
            let k = keys(queue)
            if try await redis.run(DiscardCall(k, id: id.rawValue)).int == 1 { return }
        }
        throw QueueError(.notFound, "job \(id) is not in the dead set")
    }
}

extension RedisValue {
    /// A flat array of alternating names and values (`HGETALL`'s and `XINFO`'s reply shape), as a dictionary.
    var fields: [String: RedisValue]? {
        guard let flat = array else { return nil }
        var fields: [String: RedisValue] = [:]
        for i in stride(from: 0, to: flat.count - 1, by: 2) { fields[flat[i].string ?? ""] = flat[i + 1] }
        return fields
    }
}
