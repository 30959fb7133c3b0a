import Durations
import Foundation
import Logging
import Redis
import ServiceLifecycle
import Synchronization
import Traces

/// How a worker process runs.
public struct WorkerOptions: Sendable {
    /// Queues to serve with their weights: a queue of weight 3 is tried first three times as often as one of weight 1.
    public var queues: [(name: String, weight: Int)]
    /// Jobs run at once in this process.
    public var concurrency: Int
    /// At most this many jobs of a queue at once in this process (within `concurrency`); a queue not named here is
    /// bound by `concurrency` alone. Slow, I/O-bound queues can run thousands while Postgres-bound ones stay within
    /// the connection pool.
    public var queueLimits: [String: Int]
    /// At most this many jobs of a queue at once across every process that serves it (``GlobalLimits``); nil: the
    /// job files' `global_limit:`.
    public var globalLimits: [String: Int]?
    /// On SIGTERM, in-flight jobs get this long to finish before they are handed back to the queue.
    public var gracePeriod: Duration
    /// How long one blocking read waits for work (a shutdown interrupts it at once).
    public var blockTimeout: Duration
    /// How often delayed jobs and retries are moved onto the queues (by the process that runs the upkeep).
    public var promoteInterval: Duration
    /// How often expired leases are looked for (by the process that runs the upkeep).
    public var reclaimInterval: Duration
    /// The upkeep lease's time to live: how long the queues go without upkeep when the process running it dies.
    public var upkeepLease: Duration
    /// The consumer name in Redis: host, pid and a random suffix.
    public var consumer: String
    /// Told of every job that starts and ends here (metrics, the process registry's counters).
    public var observers: [any WorkerObserver] = []
    /// Where the reservations jobs carry are settled (``ReservationLedger``): the upkeep leader hands it what ended
    /// jobs owe, every `promoteInterval`. Without one, settlements wait in Redis for a worker that has it.
    public var ledger: (any ReservationLedger)?
    /// More work for the upkeep leader (e.g. a transactional outbox's relay).
    public var leaderTasks: [LeaderTask] = []
    /// Tests only: each batch of outcomes waits this long before it is recorded (a recording slowed by load).
    package var recordingDelay: Duration = .zero
    /// Tests only: a finished job's thread stalls this long after handing its outcome on, before the job leaves the
    /// running ones (a thread descheduled there by a loaded machine).
    package var finishingStall: Duration = .zero

    /// `carbscan work`'s default: see `WorkCommand.concurrency` for the measurement behind it.
    public static let defaultConcurrency = 1000

    public init(
        queues: [(name: String, weight: Int)], concurrency: Int = defaultConcurrency, queueLimits: [String: Int] = [:],
        gracePeriod: Duration = .seconds(25),
        blockTimeout: Duration = .seconds(2), promoteInterval: Duration = .milliseconds(200),
        reclaimInterval: Duration = .seconds(1), upkeepLease: Duration = .seconds(10), consumer: String? = nil
    ) {
        self.queues = queues
        self.concurrency = max(1, concurrency)
        self.queueLimits = queueLimits.mapValues { max(1, $0) }
        self.gracePeriod = gracePeriod
        self.blockTimeout = blockTimeout
        self.promoteInterval = promoteInterval
        self.reclaimInterval = reclaimInterval
        self.upkeepLease = upkeepLease
        self.consumer =
            consumer ?? "\(ProcessInfo.processInfo.hostName):\(getpid()):\(String(UInt16.random(in: .min ... .max), radix: 16))"
    }
}

/// A worker process's engine: fetches jobs in batches (a blocking read when idle, so pickup is push-like),
/// runs up to `concurrency` at once, renews their leases, enforces each kind's timeout, records outcomes in
/// batches, and on graceful shutdown stops fetching, lets jobs finish within the grace period and hands the
/// rest back at once. It takes its turn at the queues' `Upkeep` (one process at a time runs it).
public final class Worker: Service {
    let queue: JobQueue
    let registry: JobRegistry
    public let options: WorkerOptions
    let logger: Logger
    let slots: Slots
    let inFlight = InFlight()
    /// The consumer spans' names and shared attributes, by shard (only sampled jobs ask).
    private let consumerSpans = ConsumerSpans()
    let outcomes = Batcher<JobOutcome>()
    /// Jobs that ended here and whose outcomes are not recorded yet, by id: their leases are renewed with the running
    /// jobs', since until the outcome is recorded another worker may take a job whose lease ran out and run it again.
    /// A rolling deploy on a loaded machine ran a job twice that way (ops/faults/hosts.sh, CI of 2026-11-29).
    private let unrecorded = Mutex<[JobID: ReservedJob]>([:])
    private let stopping = Atomic<Bool>(false)
    private let limits: Mutex<[String: Int]>
    /// The served queues' limits across processes.
    let globalLimits: GlobalLimits
    private let stoppedAt = Mutex<ContinuousClock.Instant?>(nil)
    private let upkeepTask = Mutex<Task<Void, Never>?>(nil)
    private let quieted = Atomic<Bool>(false)
    /// Served queues an operator paused (`carbscan queues pause`): no job of theirs is fetched.
    private let paused = Mutex<Set<String>>([])
    private let fetchConnections = Mutex<FetchConnections?>(nil)
    /// Whether the fetch loops run (a stop unblocks their reads until they returned).
    private let fetching = Atomic<Bool>(false)
    /// Who may read now (`fetchAlongside`).
    private let turns = Mutex(FetchTurns())
    /// The most jobs one read takes.
    static let readSize = 500
    /// After a stop, outcomes that cannot be recorded within the grace period and this are left to the leases.
    static let recordingBound = Duration.seconds(3)

    public init(queue: JobQueue, registry: JobRegistry, options: WorkerOptions, logger: Logger) {
        self.queue = queue
        self.registry = registry
        self.options = options
        self.logger = logger
        self.slots = Slots(options.concurrency)
        self.limits = Mutex(options.queueLimits)
        let served = Set(options.queues.map(\.name))
        let global = (options.globalLimits ?? queue.catalog.globalLimits).filter { served.contains($0.key) }
        // The permits' lease is the shortest job lease of the served queues: renewed with the jobs', by the heartbeat.
        let lease =
            queue.catalog.kinds.values.filter { served.contains($0.queue) }.map(\.visibilityTimeout).min() ?? .seconds(30)
        self.globalLimits = GlobalLimits(queue: queue, holder: options.consumer, limits: global, lease: lease, logger: logger)
    }

    /// Each queue's limit now: `options.queueLimits` until a reload of settings replaces them.
    public var queueLimits: [String: Int] { limits.withLock { $0 } }

    /// Replaces the served queues' limits across processes (a reload of settings). They hold for the jobs started from
    /// then on: a limit added while its queue's jobs run does not count those.
    public func setGlobalLimits(_ newLimits: [String: Int]) {
        globalLimits.setLimits(newLimits.filter { queueNames.contains($0.key) })
        slots.limitsChanged()
    }

    /// Each served queue's limit across processes now.
    public var globalQueueLimits: [String: Int] { globalLimits.limits }

    /// Replaces the queues' limits (a reload of settings). A lowered limit takes effect at the next fetch: no job of
    /// that queue starts until fewer than the new limit run; running jobs are not interrupted.
    public func setQueueLimits(_ newLimits: [String: Int]) {
        limits.withLock { $0 = newLimits.mapValues { max(1, $0) } }
        slots.limitsChanged()
    }

    var queueNames: [String] { options.queues.map(\.name) }
    /// The Redis queues read for them: each queue itself, or its shards.
    var shardNames: [String] { queueNames.flatMap { queue.shards(of: $0) } }

    /// Runs until stopped: by ``stop()``, a graceful shutdown, or the cancellation of the task that runs it, which
    /// stops it the same way (running jobs finish within the grace period, the rest are handed back). Before,
    /// a cancelled worker kept fetching: every wait in its loops returned at once, and it spun a core until the
    /// process ended (a service group that cancels its services, a test that cancels its worker's task).
    public func run() async throws {
        try await withTaskCancellationHandler {
            try await runUntilStopped()
        } onCancel: {
            requestStop()
        }
    }

    private func runUntilStopped() async throws {
        let connections = FetchConnections(redis: queue.redis)
        fetchConnections.withLock { $0 = connections }
        defer {
            fetchConnections.withLock { $0 = nil }
            connections.close()
        }
        // The handler covers start-up too: a SIGTERM while Redis is still unreachable ends the process.
        await withGracefulShutdownHandler {
            await self.untilRedisAnswers {
                try await self.queue.syncShards()
                try await self.queue.prepare(queues: self.shardNames, consumer: self.options.consumer)
            }
            guard !self.isStopping else { return }
            if let warning = try? await self.queue.evictionWarning() { self.logger.warning("\(warning)") }
            self.logger.info(
                "worker started",
                metadata: [
                    "consumer": "\(self.options.consumer)", "queues": "\(self.queueNames.joined(separator: ","))",
                    "concurrency": "\(self.options.concurrency)",
                ])
            let recording = Task { await self.recordOutcomes() }
            self.startUpkeep()
            // Timeouts and lease renewal run until every job is finished or handed back (leases must be renewed
            // during the drain).
            let housekeeping = Task {
                await withDiscardingTaskGroup { group in
                    group.addTask { await self.maintain("timeouts", every: .milliseconds(100)) { self.enforceTimeouts() } }
                    group.addTask { await self.maintain("lease renewal", every: self.heartbeatInterval) { try await self.renewLeases() } }
                    group.addTask { await self.maintain("shard sync", every: .seconds(5)) { try await self.followShards() } }
                }
            }
            self.fetching.store(true, ordering: .sequentiallyConsistent)
            if self.options.concurrency > Self.readSize {
                await withDiscardingTaskGroup { group in
                    group.addTask { await self.fetch(using: connections) }
                    group.addTask { await self.fetchAlongside() }
                }
            } else {
                await self.fetch(using: connections)
            }
            self.fetching.store(false, ordering: .sequentiallyConsistent)
            await self.drain()
            // Leases are renewed until the last outcome is recorded.
            self.outcomes.close()
            await recording.value
            housekeeping.cancel()
            await housekeeping.value
            await self.upkeepTask.withLock { $0 }?.value
            // Every job ended or was handed back: the permits go back now, not when their lease runs out.
            try? await self.globalLimits.renew()
            await self.queue.unregister(consumer: self.options.consumer, queues: self.shardNames)
        } onGracefulShutdown: {
            self.requestStop()
        }
        logger.info("worker stopped", metadata: ["consumer": "\(options.consumer)"])
    }

    /// Stops fetching; in-flight jobs finish within the grace period.
    public func stop() {
        stoppedAt.withLock { $0 = $0 ?? .now }
        stopping.store(true, ordering: .sequentiallyConsistent)
        slots.wake()
        // A stopping worker hands the upkeep over at once rather than when its lease runs out.
        upkeepTask.withLock { $0?.cancel() }
    }

    /// The graceful stop a SIGTERM starts, asked for from inside (`carbscan processes stop`): `run` returns once the
    /// running jobs finished or were handed back.
    public func requestStop() {
        stop()
        guard let connections = fetchConnections.withLock({ $0 }) else { return }
        // A read sent but not yet blocked on its server misses an unblock, and waits out its block (30 s on a cluster
        // worker in CI, 2026-12-07): the reads are unblocked again every 5 ms until the fetch loops returned.
        Task {
            repeat {
                await connections.unblock()
                try? await Task.sleep(for: .milliseconds(5))
            } while fetching.load(ordering: .sequentiallyConsistent)
        }
    }

    /// Takes no new job from now on; running jobs finish. The process stays up (and registered, as `quiet`) until
    /// stopped.
    public func quiet() {
        guard !quieted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        slots.limitsChanged()
        unblockFetch()
    }

    /// Whether `quiet()` was called.
    public var isQuiet: Bool { quieted.load(ordering: .acquiring) }

    /// Sets the paused queues (those this worker does not serve are ignored): their jobs are no longer fetched,
    /// running ones finish. A resumed queue's jobs are fetched again at once.
    public func setPausedQueues(_ names: Set<String>) {
        let served = names.intersection(queueNames)
        let added = paused.withLock { paused -> Bool in
            defer { paused = served }
            return !served.isSubset(of: paused)
        }
        slots.limitsChanged()
        // A read blocked on a queue paused now would still deliver its jobs (they would go back to the stream).
        if added { unblockFetch() }
    }

    /// The served queues paused now.
    public var pausedQueues: Set<String> { paused.withLock { $0 } }

    /// Cancels the task of job `id` for an operator; false when it does not run here. The job is recorded as
    /// `cancelled` when its handler returns (unless it succeeded first).
    @discardableResult
    public func cancel(_ id: JobID) -> Bool { inFlight.cancel(job: id) }

    /// The jobs running here now, with their start times.
    public var busyJobs: [BusyJob] { inFlight.busyJobs }

    private func unblockFetch() {
        guard let connections = fetchConnections.withLock({ $0 }) else { return }
        Task { await connections.unblock() }
    }

    /// Reads the queues' shard counts again: shards a producer with a larger `shards:` started filling are read from now
    /// on (their groups made first).
    private func followShards() async throws {
        guard try await queue.syncShards() else { return }
        try await queue.prepare(queues: shardNames, consumer: options.consumer)
        logger.info("queue shards changed", metadata: ["shards": "\(shardNames.joined(separator: ","))"])
        unblockFetch()
    }

    private func startUpkeep() {
        let upkeep = Upkeep(
            queue: queue, holder: options.consumer, ttl: options.upkeepLease, promoteInterval: options.promoteInterval,
            reclaimInterval: options.reclaimInterval, ledger: options.ledger, tasks: options.leaderTasks, logger: logger)
        let task = Task { await upkeep.run() }
        upkeepTask.withLock { $0 = task }
        if isStopping { task.cancel() }
    }

    var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    /// Jobs running in this process now.
    public var busy: Int { inFlight.count }

    // MARK: Fetching

    private func fetch(using connections: FetchConnections) async {
        var streak = FailureStreak("fetching jobs")
        while !isStopping {
            let free = await slots.waitForFree()
            if isStopping || free == 0 { continue }
            if turns.withLock({ $0.alone }) {
                // The other fetcher's job runs alone: nothing starts beside it.
                await Self.pause(.milliseconds(5))
                continue
            }
            // Claimed, not only counted: the other fetcher reads at the same time.
            let want = slots.claim(upTo: min(free, Self.readSize))
            var launched = 0
            defer { slots.giveBack(want - launched) }
            if want == 0 { continue }
            // Read before the rooms: a release after this point ends the wait below at once.
            let releases = slots.releases
            var room = self.room()
            // Without limits (the default) every served queue is open: no filtering per fetch.
            let open =
                room.isEmpty ? shardNames : shardNames.filter { (room[QueueShards.queue(ofShard: $0)] ?? 1) > 0 }
            if open.isEmpty {
                // Every queue is at its own limit: nothing to fetch until one of their jobs ends.
                await slots.waitForRelease(after: releases)
                continue
            }
            // The queues limited across processes: a permit per job, taken before each read, the rest given back.
            let permits = FetchPermits(globalLimits)
            defer { permits.giveBackUnused() }
            var atGlobalLimit: Set<String> = []
            var jobs: [ReservedJob] = []
            func launch(_ batch: [ReservedJob]) {
                launched += batch.count
                for job in batch {
                    permits.started(job)
                    start(job)
                }
            }
            // Idle: nothing in flight and no other read under way, so this read may be given a job to run alone; the
            // other fetcher reads nothing until this round is over (or, for such a job, until it ended).
            let holdsAlone = turns.withLock { turns in inFlight.isEmpty && !turns.secondReading && turns.takeAlone() }
            defer { if holdsAlone { turns.withLock { $0.alone = false } } }
            let idle = holdsAlone
            do {
                for name in weightedOrder() where jobs.count < want && !jobs.contains(where: \.isolated) {
                    // A sharded queue's shards share its room.
                    let limited = QueueShards.queue(ofShard: name)
                    var count = min(want - jobs.count, room[limited] ?? .max)
                    guard count > 0, !atGlobalLimit.contains(limited) else { continue }
                    if permits.limits(limited) {
                        count = try await permits.take(limited, wanted: count)
                        guard count > 0 else {
                            atGlobalLimit.insert(limited)
                            continue
                        }
                    }
                    let reserved = try await queue.reserve(
                        queue: name, count: count, consumer: options.consumer, idle: idle && jobs.isEmpty)
                    jobs += reserved
                    if let left = room[limited] { room[limited] = left - reserved.count }
                }
                if !jobs.isEmpty { launch(jobs) }
                // No permit is held through a blocking read: the read takes its own for what it delivers.
                permits.giveBackUnused()
                // Permits other processes give back are not announced: a queue at its global limit is not read, and is
                // looked at again soon.
                let reading = open.filter { !atGlobalLimit.contains(QueueShards.queue(ofShard: $0)) }
                let poll = atGlobalLimit.isEmpty ? nil : min(options.blockTimeout, GlobalLimits.pollInterval)
                if jobs.isEmpty && !isStopping && reading.isEmpty {
                    await waitForRelease(after: releases, atMost: poll)
                } else if jobs.isEmpty && !isStopping {
                    // Each read's jobs start as it returns (on a cluster, before the other reads came back).
                    jobs = try await queue.waitForJobs(
                        queues: reading, count: want, consumer: options.consumer, timeout: poll ?? options.blockTimeout,
                        connections: connections, idle: idle,
                        limits: {
                            var room = self.room()
                            try await permits.take(into: &room, wanted: want, queues: reading)
                            return room
                        }, started: launch)
                }
                streak.succeeded(logger: logger)
            } catch {
                await sleepUnlessStopping(streak.failed(error, logger: logger))
                continue
            }
            if jobs.contains(where: \.isolated) {
                await waitAlone(held: holdsAlone)
            }
        }
    }

    /// A second reader, while the worker is busy: with one, each worker's reads waited on Redis 85% of the time (each
    /// behind the other processes' calls), and Redis idled meanwhile. Two fetch loops per worker drained no-op jobs
    /// 11–29% faster (ops/bench/results/user-drain-2026-11-28-fetch-loop.md). Only for a worker that runs more jobs at
    /// once than one read takes.
    ///
    /// It claims its slots before it reads, as `fetch` does; reads only the queues with no limit here or across
    /// processes (`fetch` reads those, with their accounting), and never while nothing is in flight (`fetch`'s
    /// blocking read waits for work then) or while a job runs alone; its reads are never given a job to run alone
    /// unless it has waited 20 turns (`reserve.lua`), and then nothing else starts until it ends.
    private func fetchAlongside() async {
        var streak = FailureStreak("fetching jobs")
        while !isStopping {
            let reading = turns.withLock { turns in
                guard !turns.alone, !inFlight.isEmpty else { return false }
                turns.secondReading = true
                return true
            }
            guard reading else {
                await Self.pause(.milliseconds(50))
                continue
            }
            let want = slots.claim(upTo: Self.readSize)
            var jobs: [ReservedJob] = []
            defer {
                slots.giveBack(want - jobs.count)
                turns.withLock { $0.secondReading = false }
            }
            guard want > 0 else {
                // Every slot is taken: `fetch` waits for one to free up.
                await Self.pause(.milliseconds(5))
                continue
            }
            let room = self.room()
            let global = globalLimits.limits
            do {
                for name in weightedOrder() where jobs.count < want && !jobs.contains(where: \.isolated) {
                    let limited = QueueShards.queue(ofShard: name)
                    guard room[limited] == nil, global[limited] == nil else { continue }
                    jobs += try await queue.reserve(queue: name, count: want - jobs.count, consumer: options.consumer, idle: false)
                }
                streak.succeeded(logger: logger)
            } catch {
                await sleepUnlessStopping(streak.failed(error, logger: logger))
                continue
            }
            for job in jobs { start(job) }
            if jobs.contains(where: \.isolated) {
                await waitAlone(held: false)
            } else if jobs.count < want {
                // The unlimited queues are drained: `fetch` takes what comes next.
                await Self.pause(.milliseconds(10))
            }
        }
    }

    /// A job to run alone was started: its last worker died with it, so nothing else starts here until it ends (and what
    /// already ran beside it), and if it crashes this process too it takes no other job down. `held`: the caller holds
    /// `turns.alone` already (and gives it back itself).
    private func waitAlone(held: Bool) async {
        let taken = !held && turns.withLock { $0.takeAlone() }
        while !inFlight.isEmpty && !isStopping { await Self.pause(.milliseconds(5)) }
        if taken { turns.withLock { $0.alone = false } }
    }

    /// Waits for a job here to end (or the limits to change), or `bound` at most.
    private func waitForRelease(after releases: Int, atMost bound: Duration?) async {
        guard let bound else { return await slots.waitForRelease(after: releases) }
        let poke = Task {
            try await Task.sleep(for: bound)
            slots.limitsChanged()
        }
        await slots.waitForRelease(after: releases)
        poke.cancel()
    }

    /// How many more jobs each limited queue may start now.
    private func room() -> [String: Int] {
        var room = queueLimits.reduce(into: [:]) { room, limit in room[limit.key] = limit.value - inFlight.count(inQueue: limit.key) }
        // A quiet worker and a paused queue are a limit of nothing.
        for name in isQuiet ? Set(queueNames) : pausedQueues { room[name] = 0 }
        return room
    }

    /// Sleeps, but wakes within 50 ms of a stop (a SIGTERM is never kept waiting behind a retry's backoff) or of
    /// any of the process's Redis connections getting through again (Redis is back: no loop idles out its backoff).
    private func sleepUnlessStopping(_ delay: Duration) async {
        await Self.backOff(delay) { self.isStopping }
    }

    /// Waits out a Redis failure's backoff in 50 ms steps, ending early when `interrupted` or when another of the
    /// process's connections has reconnected since.
    private static func backOff(_ delay: Duration, interrupted: () -> Bool = { false }) async {
        let end = ContinuousClock.now + delay
        let reconnects = RedisConnectionStats.reconnects
        while !interrupted(), RedisConnectionStats.reconnects == reconnects, case let left = end - .now, left > .zero {
            await pause(min(left, .milliseconds(50)))
        }
    }

    /// Sleeps even when the calling task is cancelled. A cancelled `run` still drains its jobs, and in a cancelled
    /// task `Task.sleep` returns at once: the drain's waits would spin until the grace period ends.
    private static func pause(_ duration: Duration) async {
        await Task { try? await Task.sleep(for: duration) }.value
    }

    /// Queue order for one fetch: weighted random without replacement (Sidekiq's weighted mode), so a heavy
    /// queue goes first more often and a light one is never starved. A sharded queue's shards come together, in a
    /// random order.
    func weightedOrder() -> [String] {
        logicalOrder().flatMap { queue.shards(of: $0).shuffled() }
    }

    private func logicalOrder() -> [String] {
        var pool = options.queues
        if pool.count == 1 { return [pool[0].name] }
        var order: [String] = []
        while !pool.isEmpty {
            let total = pool.reduce(0) { $0 + max(1, $1.weight) }
            var pick = Int.random(in: 0..<total)
            let index =
                pool.firstIndex {
                    pick -= max(1, $0.weight)
                    return pick < 0
                } ?? 0
            order.append(pool.remove(at: index).name)
        }
        return order
    }

    /// The order `fetch` would try the queues in next (exposed for tests of the weighting).
    public func weightedOrderForTesting() -> [String] { weightedOrder() }

    // MARK: Running

    private func start(_ job: ReservedJob) {
        if job.expired { return reportExpired(job) }
        guard let spec = queue.catalog.runSettings[job.kind], let handler = registry.handler(for: job.kind) else {
            let reason = "no handler for job kind '\(job.kind)' in this worker"
            logger.error("job failed", metadata: ["job": "\(job.id)", "kind": "\(job.kind)", "error": "\(reason)"])
            ended(.dead(job, error: reason, retention: queue.catalog[job.kind]?.retention.failed ?? .seconds(30 * 86_400)))
            for observer in options.observers {
                observer.jobFinished(kind: job.kind, queue: QueueShards.queue(ofShard: job.queue), outcome: .dead, duration: .zero)
            }
            slots.release()
            globalLimits.ended(job)
            return
        }
        inFlight.insert(job, deadline: .now + spec.timeout)
        for observer in options.observers { observer.jobStarted(kind: job.kind, queue: QueueShards.queue(ofShard: job.queue)) }
        // The task captures no spec (some 500 bytes per job held): `finish` looks it up again in the immutable catalog.
        let task = spawn(job, handler: handler, gated: spec.gated)
        inFlight.attach(task, to: job)
    }

    /// The sampler's decision for the trace the job's producer started (a new trace for a job enqueued without one: a
    /// cron fire, a bulk enqueue).
    private static func trace(of job: ReservedJob) -> TraceDecision? {
        let carried = job.traceContext.map { TraceCarrier.traceFields(of: $0[...]) }
        return TraceSwitch.decide(traceparent: carried?.traceparent, tracestate: carried?.tracestate)
    }

    /// The job's task.
    private func spawn(_ job: ReservedJob, handler: JobRegistry.Handler, gated: Bool) -> Task<Void, Never> {
        guard gated else { return Task { await self.execute(job, handler: handler) } }
        // Bound around the task's creation, which copies it: the job's own frames stay as they are.
        return LaneGate.$current.withValue(LaneGate(queue: queue, shard: job.queue, id: job.id)) {
            Task { await self.execute(job, handler: handler) }
        }
    }

    /// The job's task. Only the handler's call is awaited: its frame stays allocated for as long as the job runs
    /// (thousands at once for AI calls), so everything after it is in `finish`, whose temporaries are not kept.
    private func execute(_ job: ReservedJob, handler: JobRegistry.Handler) async {
        let began = ContinuousClock.now
        // Decided here, in the job's task, so that the task's closure captures no decision: with the log line's
        // single pass over its metadata, 10% sampled no-op jobs ran 1.1–3.6% cheaper side by side (2026-12-08).
        switch TraceSwitch.isOn ? Self.trace(of: job) : nil {
        case .sampled(let parent): return await tracedExecute(job, handler: handler, parent: parent, began: began)
        case .dropped(let dropped):
            // A dropped trace has no span, only its context for the lines the job writes and the calls it makes:
            // bound inside the job's task. Bound around the task's creation, which copies every task-local into the
            // new task, it cost a task 0.5–0.6 µs more, about twice what it costs bound here (ops/bench/task-locals.sh,
            // 2026-12-07); bound here, with the ids' hex 8 digits at a time, a dropped trace costs a no-op job 3.3%,
            // not 7.2% (tracing-side-worker.sh).
            // The frame this keeps with every job held is there only while tracing is on.
            return await CurrentTrace.local.withValue(.dropped(dropped)) {
                finish(job, result: await outcome(of: job, handler: handler), began: began)
            }
        case nil: break
        }
        finish(job, result: await outcome(of: job, handler: handler), began: began)
    }

    /// The handler's run. Always inlined: a function of its own would be a second async frame kept with every job
    /// held.
    @inline(__always)
    private func outcome(of job: ReservedJob, handler: JobRegistry.Handler) async -> Result<String?, any Error> {
        do {
            return .success(try await handler(job.payload, context(of: job)))
        } catch {
            return .failure(error)
        }
    }

    /// `execute` as a consumer span of the sampled trace `parent` belongs to. Each attempt is a span of its
    /// own, and the lines logged while it runs and as it ends carry its ids.
    private func tracedExecute(
        _ job: ReservedJob, handler: JobRegistry.Handler, parent: SampledParent, began: ContinuousClock.Instant
    ) async {
        let shard = consumerSpans[job.queue]
        // The span bound here, not through `TraceSwitch.withSpan`: its generic async frames around the job were
        // 0.4 µs of a recorded span's cost to a no-op job, 0.1 µs once bound here (perf, 2026-12-07).
        let span = TraceSwitch.startSpan(shard.name, parent: parent, ofKind: .consumer)
        var fields = SpanFields(capacity: 11)
        fields.append(contentsOf: shard.fields)
        fields.append("messaging.message.id", .string(job.id.rawValue))
        fields.append("carbscan.job.kind", .string(job.kind))
        fields.append("carbscan.job.attempt", .int(Int64(job.attempt)))
        fields.append("carbscan.job.max_attempts", .int(Int64(job.maxAttempts)))
        fields.append("carbscan.job.since_enqueue_ms", .int(Int64(Date().timeIntervalSince(job.enqueuedAt) * 1000)))
        if job.isolated { fields.append("carbscan.job.isolated", true) }
        span.set(fields)
        await TraceSwitch.current(span) {
            let result = await outcome(of: job, handler: handler)
            if case .failure(let error) = result {
                span.recordError(error)
                span.setStatus(SpanStatus(code: .error, message: String(describing: error)))
            }
            finish(job, result: result, began: began)
        }
        span.end()
    }

    /// Not inlined, so that a profile tells it (the job's own work) from a traced job's span (`ops/bench/trace_share.py`).
    @inline(never)
    private func context(of job: ReservedJob) -> JobContext {
        JobContext(
            id: job.id, kind: job.kind, attempt: job.attempt, maxAttempts: job.maxAttempts, scheduledFor: job.scheduledFor,
            enqueuedAt: job.enqueuedAt, logger: logger, events: events(of: job))
    }

    /// Where the job's handler publishes its events: its event log, for kinds with `events: true`. A lost event is
    /// logged, never the job's failure (its result carries what the events did).
    private func events(of job: ReservedJob) -> JobEvents {
        guard let lifetime = queue.catalog.runSettings[job.kind]?.eventsLifetime else { return .discarding }
        let log = JobEventLog(redis: queue.redis, prefix: queue.options.prefix)
        let logger = logger
        let followed: @Sendable () async -> Bool = { (try? await log.isFollowed(job.id, queue: job.queue)) ?? true }
        return JobEvents(followed: followed) { type, fields in
            do {
                try await log.append(type, fields, of: job.id, queue: job.queue, lifetime: lifetime)
            } catch {
                logger.debug("job event lost", metadata: ["job": "\(job.id)", "type": "\(type)", "error": "\(error)"])
            }
        }
    }

    @inline(never)
    private func finish(_ job: ReservedJob, result: Result<String?, any Error>, began: ContinuousClock.Instant) {
        guard let spec = queue.catalog.runSettings[job.kind] else {
            preconditionFailure("start(_:) runs only jobs of the catalog's kinds")
        }
        let outcome: JobOutcome
        var logLevel = Logger.Level.info
        var message = "job succeeded"
        var errorText: String?
        switch result {
        case .success(let result):
            outcome = .succeeded(job, result: result, retention: spec.retention.succeeded)
        case .failure(let error):
            switch inFlight.cancellation(of: job) {
            case .shutdown:
                outcome = .requeue(job)
                message = "job handed back"
            case .cancelled:
                outcome = .cancelled(job, retention: spec.retention.failed)
                logLevel = .warning
                message = "job cancelled"
            case .timeout:
                errorText = "timed out after \(spec.timeout)"
                outcome = retryOrBury(job, spec: spec, error: errorText!, retryAfter: nil)
            case nil where (error as? any DependencyOutage)?.isOutage == true:
                errorText = "dependency unavailable: \(error)"
                // 0.8–1.2 s, doubled in Redis per outage in a row; the spread keeps a crowd of jobs from returning at once.
                outcome = .postpone(job, error: errorText!, after: .milliseconds(Int.random(in: 800...1200)))
            case nil:
                let failure = error as? JobFailure
                errorText = failure?.message ?? String(describing: error)
                if failure?.kind == .permanent {
                    outcome = .dead(job, error: errorText!, retention: spec.retention.failed)
                } else {
                    outcome = retryOrBury(job, spec: spec, error: errorText!, retryAfter: failure?.retryAfter)
                }
            }
            if outcome.kind == .postpone {
                logLevel = .warning
                message = "job waits for a dependency"
            } else if outcome.kind == .retry {
                logLevel = .warning
                message = "job failed, will retry"
            } else if outcome.kind == .dead {
                logLevel = .error
                message = "job failed"
            }
        }
        // The outcome is handed on before the job leaves the running ones: a stopping worker closes the recording
        // once none runs, and an outcome handed on after that was never recorded (the job stayed `running` until
        // its lease ran out, seen in CI as a hand-back that did not happen).
        ended(outcome)
        if options.finishingStall > .zero { Thread.sleep(forTimeInterval: options.finishingStall.timeInterval) }
        inFlight.remove(job)
        slots.release()
        globalLimits.ended(job)
        let duration = ContinuousClock.now - began
        for observer in options.observers {
            observer.jobFinished(kind: job.kind, queue: QueueShards.queue(ofShard: job.queue), outcome: outcome.end, duration: duration)
            observer.jobEnded(job, outcome: outcome.end)
        }
        logger.log(
            level: logLevel, "\(message)",
            metadata: {
                // Plain strings, not interpolations: `"\(job.id)"` went through `String(describing:)` and its dynamic
                // casts, a line per job (ops/bench/user-drain.sh).
                var metadata: Logger.Metadata = [
                    "job": .string(job.id.rawValue), "kind": .string(job.kind), "attempt": .string(String(job.attempt)),
                    "duration_ms": .string(duration.millisecondsText),
                ]
                if let errorText { metadata["error"] = "\(errorText)" }
                if outcome.kind == .retry { metadata["retry_in_ms"] = "\(outcome.milliseconds)" }
                return metadata
            }())
    }

    /// A job the start script ended `expired` (not started by its `start_by` time): recorded already, it only frees
    /// its slot and is reported.
    private func reportExpired(_ job: ReservedJob) {
        slots.release()
        globalLimits.ended(job)
        for observer in options.observers {
            observer.jobFinished(kind: job.kind, queue: QueueShards.queue(ofShard: job.queue), outcome: .expired, duration: .zero)
            observer.jobEnded(job, outcome: .expired)
        }
        logger.warning(
            "job expired", metadata: ["job": "\(job.id)", "kind": "\(job.kind)", "enqueued_at": "\(job.enqueuedAt)"])
    }

    private func retryOrBury(_ job: ReservedJob, spec: RunSettings, error: String, retryAfter: Duration?) -> JobOutcome {
        if job.attempt >= job.maxAttempts {
            return .dead(job, error: "\(error) (attempt \(job.attempt) of \(job.maxAttempts))", retention: spec.retention.failed)
        }
        let delay = max(spec.backoff.delay(afterAttempt: job.attempt), retryAfter ?? .zero)
        return .retry(job, error: error, after: delay)
    }

    // MARK: Recording and housekeeping

    /// Hands a job's outcome to the recording, its lease still renewed until it is recorded.
    private func ended(_ outcome: JobOutcome) {
        unrecorded.withLock { $0[outcome.job.id] = outcome.job }
        outcomes.append(outcome)
    }

    private func recordOutcomes() async {
        var streak = FailureStreak("recording outcomes")
        while let batch = await outcomes.next() {
            defer { unrecorded.withLock { jobs in for outcome in batch { jobs[outcome.job.id] = nil } } }
            if options.recordingDelay > .zero { await Self.pause(options.recordingDelay) }
            while true {
                do {
                    try await queue.record(batch)
                    streak.succeeded(logger: logger)
                    break
                } catch {
                    // The jobs stay leased to us; if Redis stays away past their visibility timeout they are
                    // re-delivered elsewhere (at-least-once), so nothing is lost by waiting here, or by giving up
                    // once a stop has waited long enough.
                    let delay = streak.failed(error, logger: logger, metadata: ["jobs": "\(batch.count)"])
                    if let stoppedAt = stoppedAt.withLock({ $0 }),
                        ContinuousClock.now > stoppedAt + options.gracePeriod + Self.recordingBound
                    {
                        logger.warning(
                            "stopping with outcomes unrecorded; their leases hand the jobs back",
                            metadata: ["jobs": "\(batch.count)"])
                        break
                    }
                    await Self.backOff(delay)
                }
            }
        }
    }

    private func maintain(_ what: String, every interval: Duration, _ body: @escaping @Sendable () async throws -> Void) async {
        var streak = FailureStreak(what)
        while !Task.isCancelled {
            do {
                try await body()
                streak.succeeded(logger: logger)
                try? await Task.sleep(for: interval)
            } catch {
                try? await Task.sleep(for: max(interval, streak.failed(error, logger: logger)))
            }
        }
    }

    /// A third of the shortest lease, so a live job's lease is renewed at least twice before it could expire.
    var heartbeatInterval: Duration {
        let kinds = queue.catalog.kinds.values.filter { queueNames.contains($0.queue) }
        return (kinds.map(\.visibilityTimeout).min() ?? .seconds(30)) / 3
    }

    private func enforceTimeouts() {
        for task in inFlight.expire(now: .now) { task.cancel() }
    }

    private func renewLeases() async throws {
        let jobs = inFlight.jobs + unrecorded.withLock { Array($0.values) }
        if !jobs.isEmpty {
            var lost = try await queue.heartbeat(jobs, consumer: options.consumer)
            // Not lost: recorded (acknowledged) while the renewal was on its way.
            if !lost.isEmpty {
                let held = Set(inFlight.jobs.map(\.entry)).union(unrecorded.withLock { $0.values.map(\.entry) })
                lost.formIntersection(held)
            }
            if !lost.isEmpty {
                logger.warning("lost leases (the jobs were handed to other workers)", metadata: ["count": "\(lost.count)"])
            }
        }
        try await globalLimits.renew()
    }

    /// After fetching stops: wait for in-flight jobs up to the grace period, then cancel the rest; they are
    /// handed back to the queue at once (never marked failed).
    private func drain() async {
        let deadline = ContinuousClock.now + options.gracePeriod
        while !inFlight.isEmpty && ContinuousClock.now < deadline {
            await Self.pause(.milliseconds(10))
        }
        let remaining = inFlight.cancelAll()
        if !remaining.isEmpty {
            logger.warning("grace period over, handing back jobs", metadata: ["count": "\(remaining.count)"])
        }
        // Handlers that ignore cancellation get a moment; whatever still runs is handed back by us.
        let hardDeadline = ContinuousClock.now + .seconds(2)
        while !inFlight.isEmpty && ContinuousClock.now < hardDeadline {
            await Self.pause(.milliseconds(10))
        }
        for job in inFlight.removeAll() {
            globalLimits.ended(job)
            ended(.requeue(job))
        }
    }

    private func untilRedisAnswers(_ body: () async throws -> Void) async {
        var streak = FailureStreak("connecting to redis")
        while !isStopping {
            do {
                try await body()
                streak.succeeded(logger: logger)
                return
            } catch {
                await sleepUnlessStopping(streak.failed(error, logger: logger))
            }
        }
    }
}

/// Which of a worker's two fetchers may read (`Worker.fetchAlongside`).
struct FetchTurns {
    /// The second fetcher has a read under way.
    var secondReading = false
    /// A job runs alone, or `fetch` reads as an idle worker (it may be given one): the other fetcher reads nothing.
    var alone = false

    /// Takes `alone` unless a fetcher holds it already; true when taken here.
    mutating func takeAlone() -> Bool {
        if alone { return false }
        alone = true
        return true
    }
}
