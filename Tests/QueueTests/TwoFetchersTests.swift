import Foundation
import JobContracts
import Queue
import Synchronization
import TestSupport
import Testing

/// A worker that runs more jobs at once than one read takes (500) reads with a second fetcher beside its own
/// (`Worker.fetchAlongside`): the concurrency, a queue's own limit and a job that must run alone still hold.
@Suite struct TwoFetchersTests {
    /// When each job ran, by its `sleepMs`.
    final class Runs: Sendable {
        private let state = Mutex([(sleepMs: Int, from: ContinuousClock.Instant, to: ContinuousClock.Instant)]())
        func add(_ sleepMs: Int, _ from: ContinuousClock.Instant) { state.withLock { $0.append((sleepMs, from, .now)) } }
        var all: [(sleepMs: Int, from: ContinuousClock.Instant, to: ContinuousClock.Instant)] { state.withLock { $0 } }
    }

    struct TimedNoop: JobKind {
        typealias Contract = NoopContract
        let runs: Runs
        func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
            let from = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(parameters.sleepMs ?? 0))
            runs.add(parameters.sleepMs ?? 0, from)
            return nil
        }
    }

    static func worker(_ env: TestEnvironment, concurrency: Int, limit: Int? = nil, _ kind: some JobKind) -> (Worker, Task<Void, any Error>)
    {
        var registry = JobRegistry()
        registry.register(kind)
        let worker = Worker(
            queue: env.queue, registry: registry,
            options: WorkerOptions(
                queues: [("default", 1)], concurrency: concurrency, queueLimits: limit.map { ["default": $0] } ?? [:]),
            logger: env.logger)
        return (worker, Task { try await worker.run() })
    }

    static func enqueue(_ env: TestEnvironment, _ count: Int, sleepMs: Int) async throws {
        _ = try await env.queue.enqueue(
            Array(repeating: (kind: "noop", payload: .object(["sleepMs": .int(sleepMs)]), options: EnqueueOptions()), count: count))
    }

    /// 2,000 jobs of 200 ms through a worker of concurrency 600: both fetchers read all along (more than one read's 500
    /// run at once), and never more than 600 run at once (each claims its slots before it reads). With 20 ms jobs a
    /// loaded CI machine finished the first read's 500 before the second fetcher's read came back.
    @Test func theConcurrencyHoldsWithTwoFetchers() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let gauge = QueueLimitTests.Gauge()
        try await Self.enqueue(env, 2000, sleepMs: 200)
        let (worker, task) = Self.worker(env, concurrency: 600, QueueLimitTests.GaugedNoop(gauge: gauge))
        #expect(try await eventually(timeout: .seconds(60)) { try await env.stats().succeededTotal == 2000 })
        worker.stop()
        try await task.value
        #expect(gauge.most <= 600)
        #expect(gauge.most > 500)
    }

    /// A queue's own limit is read by the first fetcher only: 12 jobs of 300 ms on a queue limited to 2 in a worker of
    /// concurrency 1000.
    @Test func aQueuesLimitHoldsWithTwoFetchers() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let gauge = QueueLimitTests.Gauge()
        let (worker, task) = Self.worker(env, concurrency: 1000, limit: 2, QueueLimitTests.GaugedNoop(gauge: gauge))
        try await Self.enqueue(env, 12, sleepMs: 300)
        #expect(try await eventually(timeout: .seconds(30)) { try await env.stats().succeededTotal == 12 })
        worker.stop()
        try await task.value
        #expect(gauge.most == 2)
    }

    /// A job whose lease ran out runs alone on a worker of concurrency 1000: no job starts beside it, though 40 wait
    /// behind it and the worker has room for them all.
    @Test func aJobWhoseLeaseRanOutRunsAloneWithTwoFetchers() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        try await env.queue.prepare(queues: ["default"])
        let lost = try await env.enqueue(.object(["sleepMs": .int(700)]), options: EnqueueOptions(indexed: true))
        #expect(try await env.queue.reserve(queue: "default", count: 10, consumer: "crashed").map(\.id) == [lost])
        try await Task.sleep(for: .milliseconds(3200))
        #expect(try await env.queue.reclaimExpiredLeases(queue: "default") == [lost])
        try await Self.enqueue(env, 40, sleepMs: 50)
        let runs = Runs()
        let (worker, task) = Self.worker(env, concurrency: 1000, TimedNoop(runs: runs))
        #expect(try await eventually(timeout: .seconds(30)) { try await env.stats().succeededTotal == 41 })
        worker.stop()
        try await task.value
        let alone = try #require(runs.all.first { $0.sleepMs == 700 })
        let beside = runs.all.filter { $0.sleepMs != 700 && $0.from < alone.to && $0.to > alone.from }
        #expect(beside.count == 0)
        #expect(try await env.queue.record(lost)?.attempts == 2)
    }
}
