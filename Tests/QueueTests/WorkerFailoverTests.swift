import Foundation
import JSON
import JobContracts
import Logging
import Queue
import Redis
import Synchronization
import TestSupport
import Testing

/// A cluster master killed under a running worker: its replica takes over, the worker follows the new map (its reads,
/// acknowledgements and upkeep go to the promoted node) and every job enqueued durably before the kill, or enqueued
/// after it, runs. What may run twice is bounded by what was in flight, plus the acknowledgements the replica had not
/// received when its master died.
@Suite(.serialized) struct WorkerFailoverTests {
    /// noop that records every run of its job.
    struct RecordedNoop: JobKind {
        typealias Contract = NoopContract
        let runs: Runs
        func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
            runs.counts.withLock { $0[context.id, default: 0] += 1 }
            try await Task.sleep(for: .milliseconds(parameters.sleepMs ?? 0))
            return nil
        }
    }

    /// How many times each job ran.
    final class Runs: Sendable {
        let counts = Mutex<[JobID: Int]>([:])
        var snapshot: [JobID: Int] { counts.withLock { $0 } }
    }

    @Test func workersFollowAMasterFailoverAndEveryJobRuns() async throws {
        let cluster = try PrivateCluster.start(masters: 3, replicas: 1)
        defer { cluster.stop() }
        let redis = try cluster.client()
        defer { redis.close() }
        let catalog = JobCatalog(kinds: [
            JobKindSpec(
                name: "noop", shards: 3, timeout: .seconds(5), visibilityTimeout: .seconds(3), maxAttempts: 3,
                backoff: .fixed(.milliseconds(100)))
        ])
        var durableOptions = QueueOptions(prefix: "failover")
        durableOptions.durability = Durability(replicas: 1, timeout: .seconds(1))
        let durable = JobQueue(redis: redis, catalog: catalog, options: durableOptions)
        let plain = JobQueue(redis: redis, catalog: catalog, options: QueueOptions(prefix: "failover"))
        let shard = QueueShards.names("default", count: 3)[0]
        let victim = try #require(cluster.master(ofSlot: HashSlot.of(plain.keys(shard).stream), askPort: cluster.nodes[0].port))
        let synced = try await eventually(timeout: .seconds(30)) {
            (try? await redis.pipeline(
                (0..<60).map { ["SET", "sync:\($0)", "1"] }, durability: Durability(replicas: 1, timeout: .seconds(1)))) != nil
        }
        try #require(synced, "the replicas never synced")

        // 3,000 jobs of 10 ms, written to the replicas too; a worker of concurrency 30 needs about a second for them.
        let before = try await durable.enqueue(
            Array(repeating: (kind: "noop", payload: .object(["sleepMs": 10]), options: EnqueueOptions()), count: 3000))
        let beforeIDs = before.compactMap(\.id)
        try #require(beforeIDs.count == 3000)

        let runs = Runs()
        var registry = JobRegistry()
        registry.register(RecordedNoop(runs: runs))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let concurrency = 30
        let worker = Worker(
            queue: plain, registry: registry,
            options: WorkerOptions(
                queues: [("default", 1)], concurrency: concurrency, blockTimeout: .seconds(1), promoteInterval: .milliseconds(100),
                reclaimInterval: .milliseconds(200)),
            logger: logger)
        let task = Task { try await worker.run() }
        defer { worker.stop() }

        // The master of the first shard dies while the worker is busy.
        let started = try await eventually(timeout: .seconds(30)) { runs.snapshot.count >= 300 }
        try #require(started)
        try #require(cluster.nodes.first { $0.port == victim }).stop()
        let ranAtKill = runs.snapshot.count
        let tookOver = try await eventually(timeout: .seconds(30)) {
            (try? await redis.send(["XLEN", plain.keys(shard).stream]))?.int != nil
        }
        try #require(tookOver, "the client never read the shard from the promoted replica")

        // Jobs enqueued after the failover (the promoted node has no replica: not durably) go to the new map too.
        let after = try await plain.enqueue(
            Array(repeating: (kind: "noop", payload: .object(["sleepMs": 10]), options: EnqueueOptions()), count: 300))
        let ids = beforeIDs + after.compactMap(\.id)
        try #require(ids.count == 3300)

        let finished = try await eventually(timeout: .seconds(60)) {
            let ran = runs.snapshot
            return ids.allSatisfy { ran[$0] != nil }
        }
        worker.stop()
        try await task.value
        let ran = runs.snapshot
        let missing = ids.filter { ran[$0] == nil }
        let twice = ran.values.filter { $0 > 1 }.count
        #expect(finished, "\(missing.count) of \(ids.count) jobs never ran (\(ranAtKill) had run at the kill)")
        // Twice: at most what was in flight on the dead node, plus the acknowledgements it had not passed on.
        #expect(twice <= 2 * concurrency, "\(twice) jobs ran twice")
        print("worker failover: \(ids.count) jobs, \(ranAtKill) run at the kill, \(missing.count) never ran, \(twice) ran twice")
    }
}
