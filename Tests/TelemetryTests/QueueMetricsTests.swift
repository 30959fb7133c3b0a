import Foundation
import JSON
import Logging
import Queue
import Redis
import ServiceLifecycle
import TestSupport
import Testing
import Workers

@testable import Telemetry

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The worker's job counters and the queue gauges, after a known sequence of jobs, scraped over HTTP from the
/// metrics listener; and the queue latency read from Redis.
@Suite struct QueueMetricsTests {
    /// Noop as these tests need it: fast fixed retries, three attempts.
    static let noop = TestKinds.noop

    static func queue(noop: String = noop, name: String = #function) throws -> JobQueue {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("carbscan-jobs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try noop.write(to: directory.appendingPathComponent("noop.yml"), atomically: true, encoding: .utf8)
        let prefix = "test-metrics-\(name.prefix { $0 != "(" })-\(UUID().uuidString.prefix(8))"
        return JobQueue(
            redis: try RedisClient(url: TestServices.redisURL), catalog: try JobCatalog.load(directory: directory.path),
            options: QueueOptions(prefix: prefix))
    }

    static var quiet: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    /// Serves `telemetry` on a free loopback port until the group is shut down.
    static func serve(_ telemetry: Telemetry) async throws -> (port: Int, group: ServiceGroup) {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = MetricsServer.application(telemetry, host: "127.0.0.1", port: 0, logger: quiet) { continuation.yield($0) }
        let group = ServiceGroup(configuration: .init(services: [app], logger: quiet))
        Task { try await group.run() }
        var ports = stream.makeAsyncIterator()
        return (try #require(await ports.next()), group)
    }

    static func get(_ port: Int) async throws -> (status: Int, body: String, contentType: String?) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, String(decoding: data, as: UTF8.self), http.value(forHTTPHeaderField: "Content-Type"))
    }

    /// A queue with a limit across processes exports it and the permits held: 2 of 3 while a worker runs 2 jobs, 0
    /// once they ended. Queues without one export neither.
    @Test(.timeLimit(.minutes(1)))
    func aGlobalLimitAndItsHeldPermitsAreScraped() async throws {
        let queue = try Self.queue(noop: Self.noop + "\nglobal_limit: 3\n")
        defer { Task { _ = try? await queue.redis.unlinkKeys(matching: queue.options.prefix + ":*") } }
        let telemetry = Telemetry(version: "1.2.3-test")
        QueueMetrics.register(queue, on: telemetry)
        let worker = Worker(
            queue: queue, registry: Handlers.registry(redis: queue.redis),
            options: WorkerOptions(queues: [("default", 1)], concurrency: 10, gracePeriod: .seconds(1)), logger: Self.quiet)
        let (port, server) = try await Self.serve(telemetry)
        defer { Task { await server.triggerGracefulShutdown() } }
        let running = Task { try await worker.run() }
        defer { running.cancel() }
        for _ in 0..<2 { _ = try await queue.enqueue("noop", payload: ["sleepMs": 2000]) }
        #expect(try await eventually(timeout: .seconds(10)) { worker.busy == 2 })
        let busy = Scrape(text: try await Self.get(port).body)
        #expect(busy.value("carbscan_queue_global_limit", [("queue", "default")]) == 3)
        // A fetch takes its permits when its read returns and gives back what it did not start: for a moment a loaded
        // CI machine scraped 3 held.
        #expect(
            try await eventually(timeout: .seconds(1)) {
                Scrape(text: try await Self.get(port).body).value("carbscan_queue_permits_held", [("queue", "default")]) == 2
            })
        #expect(try await eventually(timeout: .seconds(10)) { try await queue.stats()[0].succeededTotal == 2 })
        #expect(
            try await eventually(timeout: .seconds(5)) {
                Scrape(text: try await Self.get(port).body).value("carbscan_queue_permits_held", [("queue", "default")]) == 0
            })
        worker.stop()
        try await running.value
    }

    @Test(.timeLimit(.minutes(1)))
    func aKnownSequenceOfJobsIsCountedAndScrapedOverHTTP() async throws {
        let queue = try Self.queue()
        defer { Task { _ = try? await queue.redis.unlinkKeys(matching: queue.options.prefix + ":*") } }
        let telemetry = Telemetry(version: "1.2.3-test")
        QueueMetrics.register(queue, on: telemetry)
        var options = WorkerOptions(
            queues: [("default", 1)], concurrency: 10, blockTimeout: .seconds(1), promoteInterval: .milliseconds(100),
            reclaimInterval: .milliseconds(200))
        options.observers = [JobMetrics(catalog: queue.catalog, telemetry: telemetry)]
        let worker = Worker(queue: queue, registry: Handlers.registry(redis: queue.redis), options: options, logger: Self.quiet)
        telemetry.addWorkerGauges(concurrency: 10) { worker.busy }
        let (port, server) = try await Self.serve(telemetry)
        defer { Task { await server.triggerGracefulShutdown() } }
        let running = Task { try await worker.run() }
        defer { running.cancel() }

        // Two succeed; one fails for good (dead at once); one fails every attempt (retried twice, then dead).
        var ids: [JobID] = []
        for payload: JSONValue in [[:], [:], ["fail": "permanent"], ["fail": "retry"]] {
            ids.append(try #require(try await queue.enqueue("noop", payload: payload).id))
        }
        #expect(
            try await eventually(timeout: .seconds(20)) {
                let stats = try await queue.stats()[0]
                return stats.dead == 2 && stats.succeededTotal == 2
            })
        let (status, text, contentType) = try await Self.get(port)
        #expect(status == 200)
        #expect(contentType?.hasPrefix("text/plain") == true)
        let scrape = Scrape(text: text)
        let job = [("queue", "default"), ("kind", "noop")]
        #expect(scrape.value("carbscan_jobs_started_total", job) == 6, "\(text)")
        #expect(scrape.value("carbscan_jobs_succeeded_total", job) == 2)
        #expect(scrape.value("carbscan_jobs_failed_total", job) == 4)
        #expect(scrape.value("carbscan_jobs_retried_total", job) == 2)
        #expect(scrape.value("carbscan_jobs_dead_total", job) == 2)
        #expect(scrape.value("carbscan_jobs_postponed_total", job) == 0)
        #expect(scrape.value("carbscan_job_duration_seconds_count", job) == 6)
        let queueLabels = { (state: String) in [("queue", "default"), ("state", state)] }
        #expect(scrape.value("carbscan_queue_jobs", queueLabels("dead")) == 2)
        #expect(scrape.value("carbscan_queue_jobs", queueLabels("queued")) == 0)
        #expect(scrape.value("carbscan_queue_jobs", queueLabels("running")) == 0)
        #expect(scrape.value("carbscan_queue_jobs", queueLabels("retrying")) == 0)
        #expect(scrape.value("carbscan_queue_latency_seconds", [("queue", "default")]) == 0)
        #expect(scrape.value("carbscan_queue_paused", [("queue", "default")]) == 0)
        #expect(scrape.value("carbscan_queue_global_limit", [("queue", "default")]) == nil)
        #expect(scrape.value("carbscan_queue_permits_held", [("queue", "default")]) == nil)
        #expect(scrape.value("carbscan_worker_concurrency") == 10)
        #expect(scrape.value("carbscan_worker_busy_slots") == 0)
        #expect(scrape.value("carbscan_build_info", [("version", "1.2.3-test")]) == 1)
        let started = try #require(scrape.value("carbscan_process_start_time_seconds"))
        #expect(started <= Date().timeIntervalSince1970 && started > Date().timeIntervalSince1970 - 86_400 * 365)
        #expect((scrape.value("carbscan_redis_connections", [("state", "open")]) ?? 0) >= 1)
        // Bounded labels: queues, kinds, states, never a job.
        for id in ids { #expect(!text.contains(id.rawValue)) }
        #expect(scrape.labelValues.isSubset(of: Self.boundedLabelValues), "\(scrape.labelValues.subtracting(Self.boundedLabelValues))")
    }

    /// A paused queue reads 1 and the registry's live workers are counted (the registry's own state, at scrape time).
    @Test(.timeLimit(.minutes(1)))
    func pausedQueuesAndLiveWorkersComeFromTheRegistry() async throws {
        let queue = try Self.queue()
        defer { Task { _ = try? await queue.redis.unlinkKeys(matching: queue.options.prefix + ":*") } }
        let telemetry = Telemetry()
        QueueMetrics.register(queue, on: telemetry)
        var scrape = Scrape(text: try await telemetry.scrape())
        #expect(scrape.value("carbscan_queue_paused", [("queue", "default")]) == 0)
        #expect(scrape.value("carbscan_workers_alive") == 0)

        try await QueueControl(queue: queue).pause(queue: "default")
        let counters = ProcessCounters()
        var options = WorkerOptions(queues: [("default", 1)], concurrency: 2, blockTimeout: .seconds(1))
        options.observers = [counters]
        let worker = Worker(queue: queue, registry: Handlers.registry(redis: queue.redis), options: options, logger: Self.quiet)
        let beacon = ProcessBeacon(
            queue: queue, worker: worker, counters: counters, interval: .seconds(3), version: "test", logger: Self.quiet)
        let beating = Task { try await beacon.run() }
        defer { beating.cancel() }
        #expect(
            try await eventually(timeout: .seconds(10)) {
                Scrape(text: try await telemetry.scrape()).value("carbscan_workers_alive") == 1
            })
        scrape = Scrape(text: try await telemetry.scrape())
        #expect(scrape.value("carbscan_queue_paused", [("queue", "default")]) == 1)
    }

    /// Queue, kind and state names: everything a scrape of these tests may label with (bucket bounds aside).
    static let boundedLabelValues = Set(["default", "noop", "1.2.3-test", "open", "busy"] + QueueMetrics.states)

    @Test func theLatencyIsTheAgeOfTheOldestWaitingJobAndDelayedJobsDoNotCount() async throws {
        let queue = try Self.queue()
        defer { Task { _ = try? await queue.redis.unlinkKeys(matching: queue.options.prefix + ":*") } }
        // Only a delayed job: nothing waits.
        _ = try await queue.enqueue("noop", payload: [:], options: EnqueueOptions(delay: .seconds(60)))
        var state = try #require(try await queue.states().first)
        #expect(state.scheduled == 1 && state.queued == 0)
        #expect(state.latency == .zero)
        // A job enqueued now waits; a second one, delivered, no longer does (the group exists from then on).
        let waited = ContinuousClock.now
        _ = try await queue.enqueue("noop", payload: [:])
        try await queue.prepare(queues: ["default"])
        _ = try await queue.enqueue("noop", payload: [:])
        _ = try await queue.reserve(queue: "default", count: 1, consumer: "test")
        try await Task.sleep(for: .milliseconds(1200))
        state = try #require(try await queue.states().first)
        let age = ContinuousClock.now - waited
        #expect(state.queued == 1 && state.running == 1 && state.scheduled == 1)
        #expect(state.latency >= .milliseconds(1200) && state.latency <= age + .milliseconds(50), "\(state.latency) vs \(age)")
    }

    /// Before any worker created the consumer group every entry waits, the first one the longest.
    @Test func withoutAConsumerGroupTheStreamsFirstEntryIsTheOldest() async throws {
        let queue = try Self.queue()
        defer { Task { _ = try? await queue.redis.unlinkKeys(matching: queue.options.prefix + ":*") } }
        let enqueued = ContinuousClock.now
        _ = try await queue.enqueue("noop", payload: [:])
        try await Task.sleep(for: .milliseconds(800))
        _ = try await queue.enqueue("noop", payload: [:])
        let state = try #require(try await queue.states().first)
        let age = ContinuousClock.now - enqueued
        #expect(state.queued == 2)
        #expect(state.latency >= .milliseconds(750) && state.latency <= age + .milliseconds(50), "\(state.latency) vs \(age)")
    }

    /// A delayed job whose time came but that no upkeep promoted yet is waiting: its age counts from its due time.
    @Test func aDueJobNotYetPromotedCountsFromItsDueTime() async throws {
        let queue = try Self.queue()
        defer { Task { _ = try? await queue.redis.unlinkKeys(matching: queue.options.prefix + ":*") } }
        let enqueued = ContinuousClock.now
        _ = try await queue.enqueue("noop", payload: [:], options: EnqueueOptions(delay: .milliseconds(200)))
        try await Task.sleep(for: .milliseconds(1200))
        let state = try #require(try await queue.states().first)
        let age = ContinuousClock.now - enqueued
        #expect(state.scheduled == 1 && state.queued == 0)
        // Due 200 ms after the enqueue: waiting for about the rest of the time since.
        #expect(state.latency >= .milliseconds(950) && state.latency <= age - .milliseconds(150), "\(state.latency) vs \(age)")
    }

    /// Redis unreachable: the scrape answers 503 with the reason, never stale queue figures.
    @Test func aScrapeWithRedisDownAnswers503() async throws {
        let dead = PrivateRedis.freeLoopbackPort()
        let queue = JobQueue(
            redis: try RedisClient(url: "redis://127.0.0.1:\(dead)/0"), catalog: try Self.queue().catalog,
            options: QueueOptions(prefix: "test-metrics-down"))
        let telemetry = Telemetry()
        QueueMetrics.register(queue, on: telemetry)
        let (port, server) = try await Self.serve(telemetry)
        defer { Task { await server.triggerGracefulShutdown() } }
        let (status, body, _) = try await Self.get(port)
        #expect(status == 503)
        #expect(body.hasPrefix("metrics unavailable:"))
    }
}
