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
        private let state = Mutex((now: 0, most: 0))
        func enter() { state.withLock { $0 = ($0.now + 1, max($0.most, $0.now + 1)) } }
        func leave() { state.withLock { $0.now -= 1 } }
        var most: Int { state.withLock { $0.most } }
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

    /// 12 jobs of 300 ms on a queue limited to 2, in a worker of concurrency 10 that is already waiting when they
    /// arrive (the blocking read's path) and then fetches the rest (the non-blocking path): never more than 2 run at
    /// once, and all finish (10 ran at once without the limit).
    @Test func aQueuesLimitBoundsItsJobsInFlight() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let gauge = Gauge()
        var registry = JobRegistry()
        registry.register(GaugedNoop(gauge: gauge))
        let worker = Worker(
            queue: env.queue, registry: registry,
            options: WorkerOptions(queues: [("default", 1)], concurrency: 10, queueLimits: ["default": 2]), logger: env.logger)
        let task = Task { try await worker.run() }
        let stream = env.queue.keys("default").stream
        #expect(try await eventually { (try? await env.redis.send(["XINFO", "CONSUMERS", stream, QueueKeys.group]))?.array?.count == 1 })
        for _ in 0..<12 { _ = try await env.enqueue(["sleepMs": 300]) }
        let finished = try await eventually(timeout: .seconds(60)) { try await env.stats().succeededTotal == 12 }
        worker.stop()
        try await task.value
        #expect(finished)
        #expect(gauge.most <= 2, "\(gauge.most) jobs of the queue ran at once; its limit is 2")
    }
}
