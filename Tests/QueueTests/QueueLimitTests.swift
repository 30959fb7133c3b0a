import Foundation
import JobContracts
import Queue
import Synchronization
import TestSupport
import Testing

/// A queue's own limit bounds how many of its jobs a worker runs at once, below the worker's concurrency.
@Suite struct QueueLimitTests {
    /// Counts the jobs inside the handler at once: Redis's pending count would also hold finished jobs whose outcome
    /// the worker has not recorded yet.
    final class Gauge: Sendable {
        private let state = Mutex((now: 0, most: 0, starts: [(at: ContinuousClock.Instant, running: Int)]()))
        func enter() {
            state.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
                $0.starts.append((.now, $0.now))
            }
        }
        func leave() { state.withLock { $0.now -= 1 } }
        var now: Int { state.withLock { $0.now } }
        var most: Int { state.withLock { $0.most } }
        /// How many jobs started at or after `instant`.
        func starts(since instant: ContinuousClock.Instant) -> Int { state.withLock { $0.starts.filter { $0.at >= instant }.count } }
        /// The most jobs inside the handler at the start of a job that started in `period`.
        func most(startedIn period: Range<ContinuousClock.Instant>) -> Int {
            state.withLock { $0.starts.filter { period.contains($0.at) }.map(\.running).max() ?? 0 }
        }
    }

    struct GaugedNoop: JobKind {
        typealias Contract = NoopContract
        let gauge: Gauge
        func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
            gauge.enter()
            defer { gauge.leave() }
            try await Task.sleep(for: .milliseconds(parameters.sleepMs ?? 0))
            return nil
        }
    }

    /// A worker of concurrency 10 serving the default queue with `limit`, its handler counted by the gauge.
    static func gaugedWorker(limit: Int) throws -> (TestEnvironment, Gauge, Worker, Task<Void, any Error>) {
        let env = try TestEnvironment()
        let gauge = Gauge()
        var registry = JobRegistry()
        registry.register(GaugedNoop(gauge: gauge))
        let worker = Worker(
            queue: env.queue, registry: registry,
            options: WorkerOptions(queues: [("default", 1)], concurrency: 10, queueLimits: ["default": limit]), logger: env.logger)
        return (env, gauge, worker, Task { try await worker.run() })
    }

    /// 12 jobs of 300 ms on a queue limited to 2, in a worker of concurrency 10 that is already waiting when they
    /// arrive (the blocking read's path) and then fetches the rest (the non-blocking path): never more than 2 run at
    /// once, and all finish (10 ran at once without the limit).
    @Test func aQueuesLimitBoundsItsJobsInFlight() async throws {
        let (env, gauge, worker, task) = try Self.gaugedWorker(limit: 2)
        defer { Task { await env.cleanUp() } }
        let stream = env.queue.keys("default").stream
        #expect(try await eventually { (try? await env.redis.send(["XINFO", "CONSUMERS", stream, QueueKeys.group]))?.array?.count == 1 })
        for _ in 0..<12 { _ = try await env.enqueue(["sleepMs": 300]) }
        let finished = try await eventually(timeout: .seconds(60)) { try await env.stats().succeededTotal == 12 }
        worker.stop()
        try await task.value
        #expect(finished)
        #expect(gauge.most <= 2, "\(gauge.most) jobs of the queue ran at once; its limit is 2")
    }

    /// A reload of settings: the limit lowered from 4 to 2 while 4 jobs run starts no job until fewer than 2 run (the
    /// running ones go on); raised to 6, more start at once, without waiting for the next job to end.
    @Test func aReloadedLimitHoldsFromItsChange() async throws {
        let (env, gauge, worker, task) = try Self.gaugedWorker(limit: 4)
        defer { Task { await env.cleanUp() } }
        for _ in 0..<40 { _ = try await env.enqueue(["sleepMs": 300]) }
        #expect(try await eventually(timeout: .seconds(30)) { gauge.now == 4 })
        worker.setQueueLimits(["default": 2])
        let lowered = ContinuousClock.now
        #expect(worker.queueLimits == ["default": 2])
        // Four jobs start under the lowered limit before it is raised again.
        #expect(try await eventually(timeout: .seconds(60)) { gauge.starts(since: lowered) >= 4 })
        let raised = ContinuousClock.now
        worker.setQueueLimits(["default": 6])
        let finished = try await eventually(timeout: .seconds(60)) { try await env.stats().succeededTotal == 40 }
        worker.stop()
        try await task.value
        #expect(finished)
        let whileLowered = gauge.most(startedIn: lowered..<raised)
        #expect(whileLowered >= 1 && whileLowered <= 2, "a job started with \(whileLowered) running under a limit of 2")
        #expect(gauge.most(startedIn: raised..<ContinuousClock.now) == 6)
        #expect(gauge.most <= 6)
    }

    /// Raised while the queue is at its limit and no job is about to end, the limit lets the waiting jobs start at
    /// once: the fetcher waiting for a release is woken by the change itself.
    @Test func aRaisedLimitWakesTheFetcher() async throws {
        let (env, gauge, worker, task) = try Self.gaugedWorker(limit: 1)
        defer { Task { await env.cleanUp() } }
        for _ in 0..<3 { _ = try await env.enqueue(["sleepMs": 8_000]) }
        #expect(try await eventually(timeout: .seconds(30)) { gauge.now == 1 })
        worker.setQueueLimits(["default": 3])
        // Well before the running job's 8 s are up.
        #expect(try await eventually(timeout: .seconds(4)) { gauge.now == 3 })
        worker.stop()
        try await task.value
    }
}
