import Foundation
import JSON
import Logging
import Queue
import Redis
import TestSupport
import Workers

/// A queue engine on the real Redis (`REDIS_URL`) under a key prefix of its own, so tests run in parallel.
struct TestEnvironment {
    let redis: RedisClient
    let queue: JobQueue
    let prefix: String

    /// The noop kind as tests need it: short leases, fast fixed retries, a permissive schema.
    static let noop = TestKinds.noop

    init(
        kinds: [String: String] = ["noop": Self.noop], options: QueueOptions? = nil, redisURL: String = TestServices.redisURL,
        name: String = #function
    ) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("carbscan-jobs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (kind, text) in kinds {
            try text.write(to: directory.appendingPathComponent("\(kind).yml"), atomically: true, encoding: .utf8)
        }
        let catalog = try JobCatalog.load(directory: directory.path)
        redis = try RedisClient(url: redisURL)
        prefix = "test-\(name.prefix { $0 != "(" })-\(UUID().uuidString.prefix(8))"
        var queueOptions = options ?? QueueOptions()
        queueOptions.prefix = prefix
        queue = JobQueue(redis: redis, catalog: catalog, options: queueOptions)
    }

    var logger: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    /// A worker with the project's handlers, running until `stop()`; returns it with its task.
    func startWorker(
        concurrency: Int = 10, grace: Duration = .seconds(5), blockTimeout: Duration = .seconds(2),
        queues: [(name: String, weight: Int)]? = nil, upkeepLease: Duration = .seconds(10), logger: Logger? = nil,
        ledger: (any ReservationLedger)? = nil, observers: [any WorkerObserver] = [], leaderTasks: [LeaderTask] = [],
        recordingDelay: Duration = .zero, finishingStall: Duration = .zero
    ) -> (Worker, Task<Void, any Error>) {
        var options = WorkerOptions(
            queues: queues ?? queue.catalog.queues.map { ($0, 1) }, concurrency: concurrency, gracePeriod: grace,
            blockTimeout: blockTimeout, promoteInterval: .milliseconds(100), reclaimInterval: .milliseconds(200),
            upkeepLease: upkeepLease)
        options.ledger = ledger
        options.observers = observers
        options.leaderTasks = leaderTasks
        options.recordingDelay = recordingDelay
        options.finishingStall = finishingStall
        let worker = Worker(queue: queue, registry: Handlers.registry(redis: redis), options: options, logger: logger ?? self.logger)
        return (worker, Task { try await worker.run() })
    }

    func status(_ id: JobID) async throws -> JobStatus? { try await queue.record(id)?.status }

    func stats(_ queueName: String = "default") async throws -> JobQueue.QueueStats {
        try await queue.stats().first { $0.queue == queueName }!
    }

    /// Deletes every key of this test.
    func cleanUp() async {
        _ = try? await redis.unlinkKeys(matching: "\(prefix):*")
        redis.close()
    }

    /// Enqueues `count` plain noop jobs in one bulk.
    func enqueueNoops(_ count: Int) async throws {
        _ = try await queue.enqueue(Array(repeating: (kind: "noop", payload: .object([:]), options: EnqueueOptions()), count: count))
    }

    /// Reserves and records as succeeded, `batch` at a time, every job of `queue` left to deliver.
    func finishAll(queue name: String = "default", batch: Int, consumer: String) async throws {
        while true {
            let jobs = try await queue.reserve(queue: name, count: batch, consumer: consumer)
            if jobs.isEmpty { return }
            try await queue.record(jobs.map { .succeeded($0, result: "null", retention: .seconds(60)) })
        }
    }

    func enqueue(_ payload: JSONValue = .object([:]), kind: String = "noop", options: EnqueueOptions = .init()) async throws -> JobID {
        try requireID(await queue.enqueue(kind, payload: payload, options: options))
    }
}

struct MissingID: Error {}

func requireID(_ result: EnqueueResult) throws -> JobID {
    guard let id = result.id else { throw MissingID() }
    return id
}
