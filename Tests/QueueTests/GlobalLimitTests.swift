import Foundation
import JobContracts
import Queue
import Redis
import TestSupport
import Testing

/// A queue's limit across worker processes (`global_limit:`, ``GlobalLimits``): permits leased in Redis, so the
/// limit holds however many workers serve the queue, and each job's permit goes back when it ends.
@Suite struct GlobalLimitTests {
    typealias Gauge = QueueLimitTests.Gauge

    /// `count` workers of concurrency 10 serving the default queue under a global limit of `limit` (none: nil), their
    /// handlers counted by one gauge.
    static func workers(_ count: Int, limit: Int?, env: TestEnvironment, gauge: Gauge) -> [(Worker, Task<Void, any Error>)] {
        (0..<count).map { _ in
            var registry = JobRegistry()
            registry.register(QueueLimitTests.GaugedNoop(gauge: gauge))
            var options = WorkerOptions(queues: [("default", 1)], concurrency: 10, gracePeriod: .seconds(1))
            options.globalLimits = limit.map { ["default": $0] } ?? [:]
            let worker = Worker(queue: env.queue, registry: registry, options: options, logger: env.logger)
            return (worker, Task { try await worker.run() })
        }
    }

    /// The permits held now, by holder.
    static func held(_ env: TestEnvironment) async throws -> [String: Int] {
        let flat = try await env.redis.send(["HGETALL", env.queue.keys("default").limitHeld]).array ?? []
        var held: [String: Int] = [:]
        for index in stride(from: 0, to: flat.count - 1, by: 2) {
            held[flat[index].string ?? ""] = Int(flat[index + 1].string ?? "") ?? -1
        }
        return held
    }

    /// 3 workers of 10 slots each, 30 jobs of 200 ms, a global limit of 4: never more than 4 run at once across the
    /// three, the limit is used (4 do run at once), all 30 finish, and every permit is given back after them. Without
    /// the limit, the 30 slots take more than 4 at once.
    @Test(arguments: [4, nil])
    func threeWorkersShareOneLimit(limit: Int?) async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let gauge = Gauge()
        let running = Self.workers(3, limit: limit, env: env, gauge: gauge)
        let stream = env.queue.keys("default").stream
        #expect(try await eventually { (try? await env.redis.send(["XINFO", "CONSUMERS", stream, QueueKeys.group]))?.array?.count == 3 })
        for _ in 0..<30 { _ = try await env.enqueue(["sleepMs": 200]) }
        let finished = try await eventually(timeout: .seconds(60)) { try await env.stats().succeededTotal == 30 }
        #expect(finished)
        if let limit {
            #expect(gauge.most == limit, "\(gauge.most) jobs ran at once under a global limit of \(limit)")
            // The last job's permit goes back as it ends, not at the next heartbeat (10 s here).
            #expect(try await eventually(timeout: .seconds(2)) { try await Self.held(env).values.reduce(0, +) == 0 })
        } else {
            #expect(gauge.most > 4, "without a limit the 3 workers ran only \(gauge.most) at once")
        }
        for (worker, _) in running { worker.stop() }
        for (_, task) in running { try await task.value }
    }

    /// A process's own limit and the global one: each holds. Two workers limited to 2 each under a global 3 run 3 at
    /// once at most, and no worker more than 2.
    @Test func theProcessLimitHoldsWithinTheGlobalOne() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let gauges = [Gauge(), Gauge()]
        let both = Gauge()
        let running = gauges.map { gauge in
            var registry = JobRegistry()
            registry.register(TwiceGaugedNoop(gauges: [gauge, both]))
            var options = WorkerOptions(queues: [("default", 1)], concurrency: 10, queueLimits: ["default": 2])
            options.globalLimits = ["default": 3]
            let worker = Worker(queue: env.queue, registry: registry, options: options, logger: env.logger)
            return (worker, Task { try await worker.run() })
        }
        for _ in 0..<20 { _ = try await env.enqueue(["sleepMs": 150]) }
        #expect(try await eventually(timeout: .seconds(60)) { try await env.stats().succeededTotal == 20 })
        #expect(both.most == 3, "\(both.most) ran at once across both under a global limit of 3")
        #expect(gauges.allSatisfy { $0.most <= 2 }, "\(gauges.map(\.most)): a worker ran more than its own limit of 2")
        for (worker, _) in running { worker.stop() }
        for (_, task) in running { try await task.value }
    }

    /// A reload lowers the global limit from 4 to 1 while 4 run: no job starts until they are down to none, then one at
    /// a time.
    @Test func aLoweredGlobalLimitHoldsForTheNextJobs() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let gauge = Gauge()
        let running = Self.workers(2, limit: 4, env: env, gauge: gauge)
        for _ in 0..<16 { _ = try await env.enqueue(["sleepMs": 400]) }
        #expect(try await eventually(timeout: .seconds(30)) { gauge.now == 4 })
        for (worker, _) in running { worker.setGlobalLimits(["default": 1]) }
        #expect(running.allSatisfy { $0.0.globalQueueLimits == ["default": 1] })
        let lowered = ContinuousClock.now
        #expect(try await eventually(timeout: .seconds(60)) { try await env.stats().succeededTotal == 16 })
        // The 4 running at the change end within 400 ms of it; every job started after them ran alone.
        let after = lowered + .milliseconds(500)
        #expect(gauge.most(startedIn: after..<ContinuousClock.now) == 1)
        for (worker, _) in running { worker.stop() }
        for (_, task) in running { try await task.value }
    }

    /// A worker that stops gracefully gives its permits back at once; a holder whose lease ran out (its process died)
    /// is dropped by the next caller, and its permits with it.
    @Test func permitsGoBackAtAStopAndLapseWithTheirLease() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let gauge = Gauge()
        let running = Self.workers(1, limit: 2, env: env, gauge: gauge)
        _ = try await env.enqueue(["sleepMs": 60_000])
        #expect(try await eventually(timeout: .seconds(30)) { try await Self.held(env).values.reduce(0, +) == 1 })
        // A holder that stopped renewing 100 ms ago, holding the other permit: the limit is full until it lapses.
        let keys = env.queue.keys("default")
        let now = Int(Date().timeIntervalSince1970 * 1000)
        _ = try await env.redis.send(["HSET", keys.limitHeld, "gone:1:0", "1"])
        _ = try await env.redis.send(["ZADD", keys.limitLeases, String(now + 1500), "gone:1:0"])
        _ = try await env.enqueue(["sleepMs": 100])
        try await Task.sleep(for: .milliseconds(800))
        #expect(gauge.now == 1, "the second job started while a live lease held the last permit")
        #expect(try await eventually(timeout: .seconds(10)) { gauge.most == 2 }, "the lapsed holder's permit was never freed")
        let heldNow = try await Self.held(env)
        #expect(heldNow["gone:1:0"] == nil, "\(heldNow)")
        let (worker, task) = running[0]
        worker.stop()
        try await task.value
        // Handed back at the stop (its 60 s job too): nothing held.
        #expect(try await Self.held(env).isEmpty)
    }
}

/// The noop handler counted by several gauges at once (one per worker, one for all).
struct TwiceGaugedNoop: JobKind {
    typealias Contract = NoopContract
    let gauges: [QueueLimitTests.Gauge]
    func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        for gauge in gauges { gauge.enter() }
        defer { for gauge in gauges { gauge.leave() } }
        try await Task.sleep(for: .milliseconds(parameters.sleepMs ?? 0))
        return nil
    }
}
