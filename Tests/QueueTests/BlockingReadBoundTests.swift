import Queue
import Testing

/// A blocking read over several queues starts no more jobs than it was asked for.
@Suite struct BlockingReadBoundTests {
    static func kind(_ queue: String) -> String {
        TestEnvironment.noop.replacingOccurrences(of: "queue: default", with: "queue: \(queue)")
    }

    /// `XREADGROUP`'s COUNT is per stream: asked for 2 over 3 queues holding 3 jobs each, the read took 6 and started
    /// them all (a worker ran 3 times its concurrency). Now it starts 2; the rest stay queued and come in later reads.
    @Test(arguments: [1, 2, 4]) func aReadOverSeveralQueuesStartsAtMostWhatWasAsked(count: Int) async throws {
        let env = try TestEnvironment(kinds: ["noop": Self.kind("a"), "noop-b": Self.kind("b"), "noop-c": Self.kind("c")])
        defer { Task { await env.cleanUp() } }
        let queues = ["a", "b", "c"]
        try await env.queue.prepare(queues: queues)
        var ids: Set<JobID> = []
        for kind in ["noop", "noop-b", "noop-c"] {
            for n in 0..<3 { ids.insert(try await env.enqueue(["n": .int(n)], kind: kind)) }
        }
        let connections = FetchConnections(redis: env.redis, name: "test-bound")
        defer { connections.close() }
        var started: Set<JobID> = []
        for _ in 0..<20 where started.count < ids.count {
            let jobs = try await env.queue.waitForJobs(
                queues: queues, count: count, consumer: "w", timeout: .milliseconds(200), connections: connections)
            #expect(jobs.count <= count, "asked for \(count), started \(jobs.count)")
            var running = 0
            for queue in queues { running += try await env.stats(queue).running }
            #expect(running == started.count + jobs.count, "running in Redis: \(running)")
            started.formUnion(jobs.map(\.id))
        }
        #expect(started == ids)
    }
}
