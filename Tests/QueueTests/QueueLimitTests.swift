import Foundation
import Queue
import TestSupport
import Testing
import Workers

/// A queue's own limit bounds how many of its jobs a worker runs at once, below the worker's concurrency.
@Suite struct QueueLimitTests {
    /// 12 jobs of 300 ms on a queue limited to 2, in a worker of concurrency 10 that is already waiting when they
    /// arrive (the blocking read's path) and then fetches the rest (the non-blocking path): never more than 2 run at
    /// once, as Redis counts them (the queue's delivered, unacknowledged entries), and all finish.
    @Test func aQueuesLimitBoundsItsJobsInFlight() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let worker = Worker(
            queue: env.queue, registry: Handlers.registry(redis: env.redis),
            options: WorkerOptions(queues: [("default", 1)], concurrency: 10, queueLimits: ["default": 2]), logger: env.logger)
        let task = Task { try await worker.run() }
        let stream = env.queue.keys("default").stream
        #expect(try await eventually { (try? await env.redis.send(["XINFO", "CONSUMERS", stream, QueueKeys.group]))?.array?.count == 1 })
        var ids: [JobID] = []
        for _ in 0..<12 { ids.append(try await env.enqueue(["sleepMs": 300])) }
        var most = 0
        let finished = try await eventually(timeout: .seconds(30)) {
            most = max(most, try await env.stats().running)
            return try await env.stats().succeededTotal == ids.count
        }
        worker.stop()
        try await task.value
        #expect(finished)
        #expect(most <= 2, "\(most) jobs of the queue ran at once; its limit is 2")
    }
}
