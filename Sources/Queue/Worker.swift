import Foundation
import Logging
import Redis
import ServiceLifecycle
import Synchronization

/// How a worker process runs.
public struct WorkerOptions: Sendable {
    /// Queues to serve with their weights: a queue of weight 3 is tried first three times as often as one of weight 1.
    public var queues: [(name: String, weight: Int)]
    /// Jobs run at once in this process.
    public var concurrency: Int
    /// On SIGTERM, in-flight jobs get this long to finish before they are handed back to the queue.
    public var gracePeriod: Duration
    /// How long one blocking read waits for work (a shutdown interrupts it at once).
    public var blockTimeout: Duration
    /// How often delayed jobs and retries are moved onto the queues.
    public var promoteInterval: Duration
    /// How often expired leases are looked for.
    public var reclaimInterval: Duration
    /// The consumer name in Redis: host, pid and a random suffix.
    public var consumer: String

    public init(
        queues: [(name: String, weight: Int)], concurrency: Int = 10, gracePeriod: Duration = .seconds(25),
        blockTimeout: Duration = .seconds(2), promoteInterval: Duration = .milliseconds(200),
        reclaimInterval: Duration = .seconds(1), consumer: String? = nil
    ) {
        self.queues = queues
        self.concurrency = max(1, concurrency)
        self.gracePeriod = gracePeriod
        self.blockTimeout = blockTimeout
        self.promoteInterval = promoteInterval
        self.reclaimInterval = reclaimInterval
        self.consumer =
            consumer ?? "\(ProcessInfo.processInfo.hostName):\(getpid()):\(String(UInt16.random(in: .min ... .max), radix: 16))"
    }
}

/// A worker process's engine: fetches jobs in batches (a blocking read when idle, so pickup is push-like),
/// runs up to `concurrency` at once, renews their leases, enforces each kind's timeout, records outcomes in
/// batches, and on graceful shutdown stops fetching, lets jobs finish within the grace period and hands the
/// rest back at once.
public final class Worker: Service {
    let queue: JobQueue
    let registry: JobRegistry
    let options: WorkerOptions
    let logger: Logger
    let slots: Slots
    let inFlight = InFlight()
    let outcomes = Batcher<JobOutcome>()
    private let stopping = Atomic<Bool>(false)

    public init(queue: JobQueue, registry: JobRegistry, options: WorkerOptions, logger: Logger) {
        self.queue = queue
        self.registry = registry
        self.options = options
        self.logger = logger
        self.slots = Slots(options.concurrency)
    }

    var queueNames: [String] { options.queues.map(\.name) }

    public func run() async throws {
        await untilRedisAnswers { try await self.queue.prepare(queues: self.queueNames, consumer: self.options.consumer) }
        logger.info(
            "worker started",
            metadata: [
                "consumer": "\(options.consumer)", "queues": "\(queueNames.joined(separator: ","))",
                "concurrency": "\(options.concurrency)",
            ])
        let connection = queue.redis.blockingConnection(name: "fetch")
        defer { connection.close() }
        await withGracefulShutdownHandler {
            let recording = Task { await self.recordOutcomes() }
            // Upkeep runs until every job is finished or handed back (leases must be renewed during the drain).
            let upkeep = Task {
                await withDiscardingTaskGroup { group in
                    group.addTask { await self.maintain(every: .milliseconds(100)) { self.enforceTimeouts() } }
                    group.addTask { await self.maintain(every: self.heartbeatInterval) { await self.renewLeases() } }
                    group.addTask { await self.maintain(every: self.options.promoteInterval) { await self.promote() } }
                    group.addTask { await self.maintain(every: self.options.reclaimInterval) { await self.reclaim() } }
                }
            }
            await self.fetch(using: connection)
            await self.drain()
            upkeep.cancel()
            self.outcomes.close()
            await recording.value
            await upkeep.value
            await self.queue.unregister(consumer: self.options.consumer, queues: self.queueNames)
        } onGracefulShutdown: {
            self.stop()
            Task { await connection.unblock() }
        }
        logger.info("worker stopped", metadata: ["consumer": "\(options.consumer)"])
    }

    /// Stops fetching; in-flight jobs finish within the grace period.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        slots.wake()
    }

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    // MARK: Fetching

    private func fetch(using connection: BlockingConnection) async {
        var failures = 0
        while !isStopping {
            let free = await slots.waitForFree()
            if isStopping || free == 0 { continue }
            let want = min(free, 500)
            var jobs: [ReservedJob] = []
            do {
                for name in weightedOrder() where jobs.count < want {
                    jobs += try await queue.reserve(queue: name, count: want - jobs.count, consumer: options.consumer)
                }
                if jobs.isEmpty && !isStopping {
                    jobs = try await queue.waitForJobs(
                        queues: queueNames, count: want, consumer: options.consumer, timeout: options.blockTimeout,
                        connection: connection)
                }
                failures = 0
            } catch {
                failures += 1
                let delay = retryDelay(afterFailures: failures)
                logger.error("fetch failed, retrying", metadata: ["error": "\(error)", "retryIn": "\(delay)"])
                try? await Task.sleep(for: delay)
                continue
            }
            slots.take(jobs.count)
            for job in jobs { start(job) }
        }
    }

    /// Queue order for one fetch: weighted random without replacement (Sidekiq's weighted mode), so a heavy
    /// queue goes first more often and a light one is never starved.
    func weightedOrder() -> [String] {
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
        guard let spec = queue.catalog[job.kind], let handler = registry.handler(for: job.kind) else {
            let reason = "no handler for job kind '\(job.kind)' in this worker"
            logger.error("job failed", metadata: ["job": "\(job.id)", "kind": "\(job.kind)", "error": "\(reason)"])
            outcomes.append(.dead(job, error: reason, retention: queue.catalog[job.kind]?.retention.failed ?? .seconds(30 * 86_400)))
            slots.release()
            return
        }
        inFlight.insert(job, deadline: .now + spec.timeout)
        let task = Task { await self.execute(job, spec: spec, handler: handler) }
        inFlight.attach(task, to: job.entry)
    }

    private func execute(_ job: ReservedJob, spec: JobKindSpec, handler: JobRegistry.Handler) async {
        let began = ContinuousClock.now
        let context = JobContext(
            id: job.id, kind: job.kind, attempt: job.attempt, maxAttempts: job.maxAttempts, scheduledFor: job.scheduledFor,
            enqueuedAt: job.enqueuedAt, logger: logger)
        let outcome: JobOutcome
        var logLevel = Logger.Level.info
        var message = "job succeeded"
        var errorText: String?
        do {
            let result = try await handler(job.payload, context)
            outcome = .succeeded(job, result: result, retention: spec.retention.succeeded)
        } catch {
            switch inFlight.cancellation(of: job.entry) {
            case .shutdown:
                outcome = .requeue(job)
                message = "job handed back"
            case .timeout:
                errorText = "timed out after \(spec.timeout)"
                outcome = retryOrBury(job, spec: spec, error: errorText!, retryAfter: nil)
            case nil:
                let failure = error as? JobFailure
                errorText = failure?.message ?? String(describing: error)
                if failure?.kind == .permanent {
                    outcome = .dead(job, error: errorText!, retention: spec.retention.failed)
                } else {
                    outcome = retryOrBury(job, spec: spec, error: errorText!, retryAfter: failure?.retryAfter)
                }
            }
            if outcome.kind == .retry {
                logLevel = .warning
                message = "job failed, will retry"
            } else if outcome.kind == .dead {
                logLevel = .error
                message = "job failed"
            }
        }
        inFlight.remove(job.entry)
        slots.release()
        outcomes.append(outcome)
        let duration = ContinuousClock.now - began
        logger.log(
            level: logLevel, "\(message)",
            metadata: {
                var metadata: Logger.Metadata = [
                    "job": "\(job.id)", "kind": "\(job.kind)", "attempt": "\(job.attempt)",
                    "duration_ms":
                        "\(String(format: "%.3f", Double(duration.milliseconds) + Double(duration.components.attoseconds % 1_000_000_000_000_000) / 1e15))",
                ]
                if let errorText { metadata["error"] = "\(errorText)" }
                if outcome.kind == .retry { metadata["retry_in_ms"] = "\(outcome.milliseconds)" }
                return metadata
            }())
    }

    private func retryOrBury(_ job: ReservedJob, spec: JobKindSpec, error: String, retryAfter: Duration?) -> JobOutcome {
        if job.attempt >= job.maxAttempts {
            return .dead(job, error: "\(error) (attempt \(job.attempt) of \(job.maxAttempts))", retention: spec.retention.failed)
        }
        let delay = max(spec.backoff.delay(afterAttempt: job.attempt), retryAfter ?? .zero)
        return .retry(job, error: error, after: delay)
    }

    // MARK: Recording and upkeep

    private func recordOutcomes() async {
        while let batch = await outcomes.next() {
            var failures = 0
            while true {
                do {
                    try await queue.record(batch)
                    break
                } catch {
                    failures += 1
                    // The jobs stay leased to us; if Redis stays away past their visibility timeout they are
                    // re-delivered elsewhere (at-least-once), so nothing is lost by waiting here.
                    let delay = retryDelay(afterFailures: failures)
                    logger.error("recording outcomes failed, retrying", metadata: ["error": "\(error)", "jobs": "\(batch.count)"])
                    try? await Task.sleep(for: delay)
                }
            }
        }
    }

    private func maintain(every interval: Duration, _ body: @escaping @Sendable () async -> Void) async {
        while !Task.isCancelled {
            await body()
            try? await Task.sleep(for: interval)
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

    private func renewLeases() async {
        let jobs = inFlight.jobs
        guard !jobs.isEmpty else { return }
        do {
            let lost = try await queue.heartbeat(jobs, consumer: options.consumer)
            if !lost.isEmpty {
                logger.warning("lost leases (the jobs were handed to other workers)", metadata: ["count": "\(lost.count)"])
            }
        } catch {
            logger.error("lease renewal failed", metadata: ["error": "\(error)"])
        }
    }

    private func promote() async {
        guard !isStopping else { return }
        for name in queueNames {
            do {
                _ = try await queue.promoteDueJobs(queue: name)
            } catch {
                logger.error("promoting due jobs failed", metadata: ["queue": "\(name)", "error": "\(error)"])
            }
        }
    }

    private func reclaim() async {
        guard !isStopping else { return }
        for name in queueNames {
            do {
                let ids = try await queue.reclaimExpiredLeases(queue: name)
                if !ids.isEmpty {
                    logger.warning("re-queued jobs whose lease expired", metadata: ["queue": "\(name)", "count": "\(ids.count)"])
                }
            } catch {
                logger.error("reclaiming expired leases failed", metadata: ["queue": "\(name)", "error": "\(error)"])
            }
        }
    }

    /// After fetching stops: wait for in-flight jobs up to the grace period, then cancel the rest; they are
    /// handed back to the queue at once (never marked failed).
    private func drain() async {
        let deadline = ContinuousClock.now + options.gracePeriod
        while !inFlight.isEmpty && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let remaining = inFlight.cancelAll()
        if !remaining.isEmpty {
            logger.warning("grace period over, handing back jobs", metadata: ["count": "\(remaining.count)"])
        }
        // Handlers that ignore cancellation get a moment; whatever still runs is handed back by us.
        let hardDeadline = ContinuousClock.now + .seconds(2)
        while !inFlight.isEmpty && ContinuousClock.now < hardDeadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        for job in inFlight.removeAll() { outcomes.append(.requeue(job)) }
    }

    private func untilRedisAnswers(_ body: () async throws -> Void) async {
        var failures = 0
        while !isStopping {
            do {
                try await body()
                return
            } catch {
                failures += 1
                let delay = retryDelay(afterFailures: failures)
                logger.error("redis unavailable, retrying", metadata: ["error": "\(error)", "retryIn": "\(delay)"])
                try? await Task.sleep(for: delay)
            }
        }
    }
}
