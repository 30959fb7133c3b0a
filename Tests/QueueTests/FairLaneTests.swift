import Foundation
import JSON
import Queue
import Redis
import TestSupport
import Testing

/// Fair lanes (`fair:`): one user's burst waits in its own lane and the queue takes the lanes in turn, a window's worth
/// past them at a time, on a single Redis and on a Redis Cluster, with shards too.
@Suite struct FairLaneTests {
    /// A kind whose lane is the payload's `user`, `window` jobs past the lanes at once.
    static func kind(window: Int, extra: String = "") -> String {
        """
        timeout: 5s
        visibility_timeout: 3s
        attempts: 3
        fair: { by: user, window: \(window) }
        \(extra)
        payload: { type: object, properties: { user: { type: string } } }
        """
    }

    static func ask(_ env: TestEnvironment, _ user: String) async throws -> JobID {
        try await env.enqueue(["user": .string(user)], kind: "ask")
    }

    /// Delivers the queue's jobs one at a time, each recorded as succeeded before the next, and returns their lanes in
    /// the order they were delivered.
    static func drainOneByOne(_ env: TestEnvironment, queues: [String] = ["default"]) async throws -> [String] {
        var order: [String] = []
        var idle = 0
        while idle < queues.count {
            idle = 0
            for queue in queues {
                let jobs = try await env.queue.reserve(queue: queue, count: 1, consumer: "c")
                guard let job = jobs.first else {
                    idle += 1
                    continue
                }
                guard case .string(let user)? = try JSONParser.parse(job.payload)["user"] else { throw MissingID() }
                order.append(user)
                try await env.queue.record([.succeeded(job, result: "null", retention: .seconds(60))])
            }
        }
        return order
    }

    /// 40 jobs of one user, then one each of 5 others: the 5 run within the first window plus one round of the lanes,
    /// not after the 40; all 45 run; the queue counts the jobs waiting in their lanes as queued.
    @Test(arguments: TestServices.redisURLs) func aBurstOfOneUserDoesNotDelayTheOthers(redisURL: String) async throws {
        let env = try TestEnvironment(kinds: ["ask": Self.kind(window: 4)], redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        for _ in 0..<40 { _ = try await Self.ask(env, "pro") }
        let others = (1...5).map { "free\($0)" }
        for user in others { _ = try await Self.ask(env, user) }
        #expect(try await env.stats().queued == 45)
        // Only the window's worth is on the stream; the rest waits in the lanes.
        #expect(try await env.redis.send(["XLEN", env.queue.keys("default").stream]).int == 4)

        let order = try await Self.drainOneByOne(env)
        #expect(order.count == 45)
        let positions = others.compactMap { order.firstIndex(of: $0) }
        #expect(positions.count == 5 && positions.allSatisfy { $0 < 4 + others.count + 1 }, "\(order)")
        #expect(try await env.stats().queued == 0)
        #expect(try await env.redis.send(["ZCARD", env.queue.keys("default").lanesHeld]).int == 0)
    }

    /// A weighted class (`weights: { pro: 3 }`) takes three turns in a row where a class without a weight takes one; a
    /// lane's weight is its last job's class's. Without the weights the lanes would alternate one by one.
    @Test(arguments: TestServices.redisURLs) func aWeightedLaneTakesItsTurnsInARow(redisURL: String) async throws {
        let kind = """
            timeout: 5s
            visibility_timeout: 3s
            attempts: 3
            fair: { by: user, window: 1, weight_by: tier, weights: { pro: 3, plus: 1 } }
            payload: { type: object, properties: { user: { type: string }, tier: { type: string } } }
            """
        let env = try TestEnvironment(kinds: ["ask": kind], redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        func ask(_ user: String, _ tier: String, _ count: Int) async throws {
            for _ in 0..<count { _ = try await env.enqueue(["user": .string(user), "tier": .string(tier)], kind: "ask") }
        }
        // The first pro job moves up at once (the window is empty); the rest wait in their lanes.
        try await ask("pro", "pro", 9)
        try await ask("free1", "free", 3)
        try await ask("free2", "plus", 3)
        let order = try await Self.drainOneByOne(env)
        let expected = [
            "pro", "pro", "pro", "pro", "free1", "free2", "pro", "pro", "pro", "free1", "free2", "pro", "pro", "free1", "free2",
        ]
        #expect(order == expected)
        let keys = env.queue.keys("default")
        // Emptied lanes leave no weight and no count of turns behind.
        #expect(try await env.redis.send(["EXISTS", keys.base + "lanes:weights", keys.base + "lanes:turns"]).int == 0)
    }

    /// The same on a queue of 2 shards: a user's jobs stay on one shard, each shard has half the window and takes its
    /// lanes in turn.
    @Test(arguments: TestServices.redisURLs) func lanesHoldOnEveryShard(redisURL: String) async throws {
        let env = try TestEnvironment(kinds: ["ask": Self.kind(window: 4, extra: "shards: 2")], redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        for _ in 0..<30 { _ = try await Self.ask(env, "pro") }
        let others = (1...6).map { "free\($0)" }
        for user in others { _ = try await Self.ask(env, user) }
        #expect(try await env.stats().queued == 36)
        let shards = QueueShards.names("default", count: 2)
        let onStreams = try await env.redis.pipeline(shards.map { ["XLEN", env.queue.keys($0).stream] }).compactMap(\.int)
        #expect(onStreams.reduce(0, +) <= 4, "\(onStreams)")

        let order = try await Self.drainOneByOne(env, queues: shards)
        #expect(order.count == 36)
        let positions = others.compactMap { order.firstIndex(of: $0) }
        // Both shards' windows, a round of each shard's lanes, and the other shard's turns in between.
        #expect(positions.count == 6 && positions.allSatisfy { $0 < 2 * (4 + others.count + 1) }, "\(order)")
    }

    /// A kind with a rate limit holds its place in the window until its job takes its token (the gate), not only until
    /// it starts: the jobs past their lanes are those waiting for the provider. A job that ends without passing the
    /// gate leaves the window as it ends.
    @Test func aRateLimitedJobHoldsItsPlaceUntilItsToken() async throws {
        let extra = "rate_limit: { name: fair-test, per_second: 1000 }"
        let env = try TestEnvironment(kinds: ["ask": Self.kind(window: 2, extra: extra)])
        defer { Task { await env.cleanUp() } }
        for _ in 0..<5 { _ = try await Self.ask(env, "pro") }
        let keys = env.queue.keys("default")
        func waiting() async throws -> Int? { try await env.redis.send(["GET", keys.lanesWaiting]).string.flatMap { Int($0) } }

        let started = try await env.queue.reserve(queue: "default", count: 5, consumer: "c")
        #expect(started.count == 2)
        // Started, yet still in the window: nothing moved up.
        #expect(try await waiting() == 3)
        #expect(try await env.queue.reserve(queue: "default", count: 5, consumer: "c").isEmpty)

        // The first takes its token: the next job moves up; a second token does nothing more.
        let gate = LaneGate(queue: env.queue, shard: "default", id: started[0].id)
        await gate.pass()
        await gate.pass()
        #expect(try await waiting() == 2)
        // Its end does not free a second place.
        try await env.queue.record([.succeeded(started[0], result: "null", retention: .seconds(60))])
        #expect(try await waiting() == 2)
        // The second ends (a failure) without a token: it leaves the window as it ends.
        try await env.queue.record([.dead(started[1], error: "no", retention: .seconds(60))])
        #expect(try await waiting() == 1)
        #expect(try await env.redis.send(["ZCARD", keys.lanesHeld]).int == 2)
    }

    /// A job cancelled while it waits in its lane never runs: it is let through when its turn comes and acknowledged
    /// unrun, and the window's place goes to the next job.
    @Test func aJobCancelledInItsLaneNeverRunsAndFreesItsPlace() async throws {
        let env = try TestEnvironment(kinds: ["ask": Self.kind(window: 1)])
        defer { Task { await env.cleanUp() } }
        let first = try await Self.ask(env, "a")
        let cancelled = try await Self.ask(env, "a")
        let last = try await Self.ask(env, "b")
        #expect(try await env.queue.cancel(cancelled) == .queued)
        var ran: [JobID] = []
        for _ in 0..<5 {
            for job in try await env.queue.reserve(queue: "default", count: 5, consumer: "c") {
                ran.append(job.id)
                try await env.queue.record([.succeeded(job, result: "null", retention: .seconds(60))])
            }
        }
        #expect(ran == [first, last])
        #expect(try await env.status(cancelled) == .cancelled)
        #expect(try await env.redis.send(["ZCARD", env.queue.keys("default").lanesHeld]).int == 0)
    }

    /// A window held by jobs whose ends no script saw (their records gone) does not stay full: the oldest is let go.
    @Test func aWindowHeldByVanishedJobsIsLetGo() async throws {
        let env = try TestEnvironment(kinds: ["ask": Self.kind(window: 2)])
        defer { Task { await env.cleanUp() } }
        let gone = [try await Self.ask(env, "a"), try await Self.ask(env, "b")]
        let waiting = try await Self.ask(env, "c")
        for id in gone { _ = try await env.redis.send(["DEL", env.queue.keys("default").job(id)]) }
        _ = try await Self.ask(env, "d")
        let delivered = try await env.queue.reserve(queue: "default", count: 10, consumer: "c").map(\.id)
        #expect(delivered.contains(waiting))
    }
}
