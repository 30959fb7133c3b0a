import Foundation
import Queue
import Redis
import Synchronization
import TestSupport
import Testing

/// The queues' upkeep (promotion, reclaim) is run by one worker at a time, holder of a lease in Redis.
@Suite struct UpkeepTests {
    /// The lease: one holder at a time, renewed only by its holder, and free once it runs out or is released.
    @Test func aLeaseHasOneHolderAndPassesOnWhenItRunsOut() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let key = "\(env.prefix):lease"
        let a = LeaderLease(redis: env.redis, key: key, holder: "a", ttl: .seconds(30))
        let b = LeaderLease(redis: env.redis, key: key, holder: "b", ttl: .seconds(30))
        #expect(try await a.acquireOrRenew())
        #expect(try await !b.acquireOrRenew())
        #expect(try await a.acquireOrRenew())
        #expect(try await env.redis.send(["PTTL", key]).int ?? 0 > 20_000)
        // Its time runs out (as if `a` had stopped renewing for 30 s).
        _ = try await env.redis.send(["PEXPIRE", key, "1"])
        try await Task.sleep(for: .milliseconds(20))
        #expect(try await b.acquireOrRenew())
        #expect(try await !a.acquireOrRenew())
        // A paused holder whose lease ran out cannot delete its successor's.
        try await a.release()
        #expect(try await b.currentHolder() == "b")
        try await b.release()
        #expect(try await a.currentHolder() == nil)
    }

    /// Three idle workers cost Redis one worker's upkeep: counted by Redis itself (the reclaim script's XPENDING
    /// calls, two per queue per round) on a Redis of the test's own. Before, each worker reclaimed every queue
    /// itself: three times as many.
    @Test func threeWorkersRunTheUpkeepOfOne() async throws {
        let server = try PrivateRedis.start()
        defer { server.stop() }
        let env = try TestEnvironment(redisURL: server.url)
        defer { Task { await env.cleanUp() } }
        let workers = (0..<3).map { _ in env.startWorker() }
        #expect(try await eventually { try await holder(env) != nil })
        _ = try await env.redis.send(["CONFIG", "RESETSTAT"])
        let window = Duration.seconds(3)
        try await Task.sleep(for: window)
        let calls = try await Self.calls("xpending", redis: env.redis)
        for (worker, _) in workers { worker.stop() }
        for (_, task) in workers { try await task.value }
        // One worker reclaiming every 200 ms: 15 rounds, 30 calls; three, 90. A loaded run only lowers the count (no
        // lower bound: the other tests show the upkeep working).
        let oneWorker = 2 * Int(window / .milliseconds(200))
        #expect(calls <= oneWorker * 3 / 2, "\(calls) XPENDING calls in \(window); one worker makes \(oneWorker)")
        #expect(try await holder(env) == nil, "the lease outlived the workers that stopped")
    }

    /// A leader that stops hands the upkeep over at once (it releases the lease, which would otherwise stay its own for
    /// its 60 s), and the other worker takes it up: a job delayed past the stop still runs.
    @Test func aStoppingLeaderHandsTheUpkeepOver() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let first = env.startWorker(upkeepLease: .seconds(60))
        let leader = first.0.options.consumer
        #expect(try await eventually { try await self.holder(env) == leader })
        // The standby asks for the lease every second (a third of its 3 s).
        let second = env.startWorker(upkeepLease: .seconds(3))
        first.0.stop()
        try await first.1.value
        #expect(try await holder(env) != leader)
        let id = try await env.enqueue(options: EnqueueOptions(delay: .milliseconds(300)))
        #expect(try await eventually(timeout: .seconds(10)) { try await env.status(id) == .succeeded })
        #expect(try await holder(env) == second.0.options.consumer)
        second.0.stop()
        try await second.1.value
    }

    /// A stopping worker lets a leader task's round in progress end before it returns: the process closes its clients
    /// once `run` returns, and a round left running failed against them and logged an error at every stop ("releasing
    /// the reservations of lost jobs failed: the Postgres client was shut down").
    @Test func aStoppingWorkerLetsTheLeaderTasksRoundEnd() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let round = SlowRound()
        let (worker, task) = env.startWorker(
            blockTimeout: .milliseconds(100), leaderTasks: [LeaderTask("a slow round", every: .seconds(60)) { await round.run() }])
        #expect(try await eventually { round.state.withLock { $0.started } })
        worker.stop()
        try await task.value
        #expect(round.state.withLock { $0.ended }, "the worker returned while the leader task's round still ran")
    }

    func holder(_ env: TestEnvironment) async throws -> String? {
        try await env.redis.send(["GET", env.queue.upkeepLeaseKey]).string
    }

    static func calls(_ command: String, redis: RedisClient) async throws -> Int {
        let info = try await redis.send(["INFO", "commandstats"]).string ?? ""
        guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(command):") }),
            let calls = line.split(separator: ",").first?.split(separator: "=").last
        else { return 0 }
        return Int(calls) ?? 0
    }
}

/// A leader task's round that takes 1.5 s whether cancelled or not, as a statement in flight does: longer than a worker
/// takes to stop.
private final class SlowRound: Sendable {
    let state = Mutex((started: false, ended: false))

    func run() async {
        state.withLock { $0.started = true }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) { continuation.resume() }
        }
        state.withLock { $0.ended = true }
    }
}
