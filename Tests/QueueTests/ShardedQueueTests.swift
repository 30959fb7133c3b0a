import Foundation
import JSON
import Logging
import Queue
import Redis
import TestSupport
import Testing
import Workers

/// A queue split into shards (`shards: N`): each shard a queue of its own in Redis (`{default#k}`), spread by the
/// producers, all read by the workers, counted as one queue. On a Redis Cluster the shards sit on several masters.
@Suite struct ShardedQueueTests {
    static func catalog(shards: Int, limit: Int? = nil) -> JobCatalog {
        JobCatalog(kinds: [
            JobKindSpec(
                name: "noop", queueLimit: limit, shards: shards, timeout: .seconds(5), visibilityTimeout: .seconds(3), maxAttempts: 3,
                backoff: .fixed(.milliseconds(100)))
        ])
    }

    /// A queue of `catalog` beside `env`'s, under its prefix: another process's configuration.
    static func queue(_ env: TestEnvironment, _ catalog: JobCatalog) -> JobQueue {
        JobQueue(redis: env.redis, catalog: catalog, options: QueueOptions(prefix: env.prefix))
    }

    static func worker(_ queue: JobQueue, registry: JobRegistry, limits: [String: Int] = [:]) -> (Worker, Task<Void, any Error>) {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let worker = Worker(
            queue: queue, registry: registry,
            options: WorkerOptions(
                queues: [("default", 1)], concurrency: 10, queueLimits: limits, blockTimeout: .seconds(1),
                promoteInterval: .milliseconds(100), reclaimInterval: .milliseconds(200)),
            logger: logger)
        return (worker, Task { try await worker.run() })
    }

    /// Plain jobs go to the shards in turn; the queue's counts add its shards up; on a cluster the shards' slots are
    /// served by more than one master.
    @Test(arguments: TestServices.redisURLs) func jobsAreSpreadOverTheShards(redisURL: String) async throws {
        let env = try TestEnvironment(redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        let queue = Self.queue(env, Self.catalog(shards: 4))
        let results = try await queue.enqueue(Array(repeating: (kind: "noop", payload: .object([:]), options: EnqueueOptions()), count: 40))
        for _ in 0..<8 { _ = try await queue.enqueue("noop", payload: .object([:])) }
        #expect(results.allSatisfy { $0.id != nil })
        let lengths = try await env.redis.pipeline(QueueShards.names("default", count: 4).map { ["XLEN", queue.keys($0).stream] })
        #expect(lengths.map(\.int) == [12, 12, 12, 12])
        #expect(try await queue.stats().first { $0.queue == "default" }?.queued == 48)
        #expect(Set(QueueShards.names("default", count: 4).map { HashSlot.of(queue.keys($0).stream) }).count == 4)
        if try await env.redis.isCluster {
            let masters = try await ClusterQueueTests.masterPorts()
            let used = Set(QueueShards.names("default", count: 4).compactMap { masters(HashSlot.of($0)) })
            #expect(used.count >= 2, "the 4 shards sit on \(used.count) master(s)")
        }
    }

    /// A unique key always lands on the same shard, so a second enqueue with it is a duplicate, on any shard count.
    @Test(arguments: TestServices.redisURLs) func aUniqueKeyIsExactAcrossShards(redisURL: String) async throws {
        let env = try TestEnvironment(redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        let queue = Self.queue(env, Self.catalog(shards: 4))
        var first: [String: JobID] = [:]
        for round in 0..<2 {
            for n in 0..<12 {
                let result = try await queue.enqueue("noop", payload: .object([:]), options: EnqueueOptions(uniqueKey: "key-\(n)"))
                if round == 0 {
                    first["key-\(n)"] = try #require(result.id)
                } else {
                    #expect(result == .duplicate(of: first["key-\(n)"]))
                }
            }
        }
        let lengths = try await env.redis.pipeline(QueueShards.names("default", count: 4).map { ["XLEN", queue.keys($0).stream] })
        #expect(lengths.compactMap(\.int).reduce(0, +) == 12)
        #expect(lengths.filter { ($0.int ?? 0) > 0 }.count > 1)
    }

    /// A worker serving the queue runs every shard's jobs once, and the queue's limit holds across its shards (a limit
    /// per shard would have let 4 × 2 run).
    @Test(arguments: TestServices.redisURLs) func aWorkerRunsEveryShardAndTheLimitSpansThem(redisURL: String) async throws {
        let env = try TestEnvironment(redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        let queue = Self.queue(env, Self.catalog(shards: 4))
        let gauge = QueueLimitTests.Gauge()
        var registry = JobRegistry()
        registry.register(QueueLimitTests.GaugedNoop(gauge: gauge))
        let (worker, task) = Self.worker(queue, registry: registry, limits: ["default": 2])
        var ids: [JobID] = []
        for _ in 0..<24 { ids.append(try #require(try await queue.enqueue("noop", payload: ["sleepMs": 50]).id)) }
        let done = try await eventually(timeout: .seconds(60)) {
            try await queue.stats().first { $0.queue == "default" }?.succeededTotal == ids.count
        }
        worker.stop()
        try await task.value
        #expect(done)
        for id in ids { #expect(try await queue.record(id)?.status == .succeeded) }
        #expect(gauge.most <= 2, "\(gauge.most) jobs of the queue ran at once; its limit is 2")
    }

    /// Resharding loses no job: jobs enqueued unsharded, then with 4 shards, are all run by a worker configured with 2
    /// (it reads every shard ever used, and the unsharded queue), whose own producers use 2.
    @Test(arguments: TestServices.redisURLs) func reshardingLosesNoJob(redisURL: String) async throws {
        let env = try TestEnvironment(redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        let (one, four, two) = (
            Self.queue(env, Self.catalog(shards: 1)), Self.queue(env, Self.catalog(shards: 4)), Self.queue(env, Self.catalog(shards: 2))
        )
        var ids: [JobID] = []
        for _ in 0..<5 { ids.append(try #require(try await one.enqueue("noop", payload: .object([:])).id)) }
        try await four.syncShards()
        for _ in 0..<20 { ids.append(try #require(try await four.enqueue("noop", payload: .object([:])).id)) }
        for _ in 0..<6 { ids.append(try #require(try await two.enqueue("noop", payload: .object([:])).id)) }
        #expect(try await env.redis.send(["XLEN", two.keys("default#3").stream]) == .integer(5))
        #expect(try await env.redis.send(["XLEN", two.keys("default#1").stream]) == .integer(8))
        let (worker, task) = Self.worker(two, registry: Handlers.registry(redis: env.redis))
        let done = try await eventually(timeout: .seconds(60)) {
            try await two.stats().first { $0.queue == "default" }?.succeededTotal == ids.count
        }
        worker.stop()
        try await task.value
        #expect(done)
        for id in ids { #expect(try await two.record(id)?.status == .succeeded, "\(id)") }
        #expect(two.shards(of: "default") == ["default", "default#0", "default#1", "default#2", "default#3"])
    }

    /// A shard of a queue belongs to it; a shard count in the files is checked.
    @Test func shardNamesAndTheirQueue() throws {
        #expect(QueueShards.names("ai", count: 1) == ["ai"])
        #expect(QueueShards.names("ai", count: 3) == ["ai#0", "ai#1", "ai#2"])
        #expect(QueueShards.queue(ofShard: "ai#2") == "ai")
        #expect(QueueShards.queue(ofShard: "ai") == "ai")
        #expect(throws: ConfigError.self) { try JobKindSpec(yaml: "shards: 0\n", name: "x", file: "x.yml") }
        #expect(throws: ConfigError.self) { try JobKindSpec(yaml: "shards: 65\n", name: "x", file: "x.yml") }
        #expect(try JobKindSpec(yaml: "shards: 8\n", name: "x", file: "x.yml").shards == 8)
    }
}
