import Foundation
import Queue
import Redis
import Synchronization
import TestSupport
import Testing
import Workers

@Suite struct RateLimiterTests {
    static func redis() throws -> RedisClient {
        try RedisClient(
            url: TestServices.redisURL, logger: WorkerTestEnvironment.logger)
    }

    /// Runs `body` with a key prefix of its own, removed afterwards.
    static func withPrefix<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
        let prefix = "test-ratelimit-\(UUID().uuidString.prefix(8).lowercased())"
        let cleaner = try redis()
        defer { cleaner.close() }
        do {
            let result = try await body(prefix)
            _ = try? await cleaner.unlinkKeys(matching: "\(prefix):*")
            return result
        } catch {
            _ = try? await cleaner.unlinkKeys(matching: "\(prefix):*")
            throw error
        }
    }

    /// Two "worker processes" (separate Redis clients), two tasks each, share one bucket of 5/s with a burst of 5:
    /// 20 tokens between them take at least (20 − 5) / 5 = 3 s. Without a shared bucket they would take
    /// milliseconds. (A lower bound on time holds however loaded the machine is.)
    @Test func workersOnSeparateConnectionsShareOneBucket() async throws {
        try await Self.withPrefix { prefix in
            let first = try Self.redis()
            let second = try Self.redis()
            defer {
                first.close()
                second.close()
            }
            let a = RateLimiter(redis: first, prefix: prefix)
            let b = RateLimiter(redis: second, prefix: prefix)
            let remaining = Remaining(20)
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for limiter in [a, a, b, b] {
                    group.addTask {
                        while remaining.take() {
                            try await limiter.acquire(name: "ai", perSecond: 5, burst: 5)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .milliseconds(2700), "20 tokens in \(elapsed)")
        }
    }

    /// Buckets with different names are independent: draining one leaves the other untouched and full. (Were they
    /// one bucket, the second burst would wait 100 s: the time limit fails the test.)
    @Test(.timeLimit(.minutes(1))) func bucketsWithDifferentNamesAreIndependent() async throws {
        try await Self.withPrefix { prefix in
            let client = try Self.redis()
            defer { client.close() }
            let limiter = RateLimiter(redis: client, prefix: prefix)
            for _ in 0..<5 { try await limiter.acquire(name: "ai", perSecond: 0.01, burst: 5) }
            #expect(try await client.send(["EXISTS", limiter.key("other")]).int == 0)
            // "ai" is empty for the next 100 s; "other" still grants its whole burst.
            for _ in 0..<5 { try await limiter.acquire(name: "other", perSecond: 0.01, burst: 5) }
            #expect(try await client.send(["EXISTS", limiter.key("ai"), limiter.key("other")]).int == 2)
        }
    }

    /// A worker waiting for a token stops waiting when its job is cancelled (timeout, shutdown).
    @Test func waitingIsCancellable() async throws {
        try await Self.withPrefix { prefix in
            let client = try Self.redis()
            defer { client.close() }
            let limiter = RateLimiter(redis: client, prefix: prefix)
            // One token per 100 s: the second caller would wait that long.
            try await limiter.acquire(name: "slow", perSecond: 0.01, burst: 1)
            let waiting = Task { try await limiter.acquire(name: "slow", perSecond: 0.01, burst: 1) }
            try await Task.sleep(for: .milliseconds(200))
            waiting.cancel()
            let clock = ContinuousClock()
            let start = clock.now
            await #expect(throws: CancellationError.self) { try await waiting.value }
            #expect(clock.now - start < .seconds(10))
        }
    }

    /// `acquire(forKind:)` draws from the bucket the kind's job file names, and does nothing for a kind without one.
    @Test func kindsDrawFromTheirConfiguredBucket() async throws {
        try await Self.withPrefix { prefix in
            let client = try Self.redis()
            defer { client.close() }
            let limiter = RateLimiter(redis: client, prefix: prefix)
            let catalog = JobCatalog(kinds: [
                JobKindSpec(name: "limited", rateLimit: RateLimit(name: "provider", perSecond: 0.01, burst: 2)),
                JobKindSpec(name: "free"),
            ])
            try await limiter.acquire(forKind: "free", catalog: catalog)
            #expect(try await client.send(["EXISTS", limiter.key("provider")]).int == 0)
            try await limiter.acquire(forKind: "limited", catalog: catalog)
            try await limiter.acquire(forKind: "limited", catalog: catalog)
            // The burst of 2 is spent: the bucket holds (almost) nothing now.
            let tokens = try await client.send(["HGET", limiter.key("provider"), "tokens"]).string.flatMap(Double.init)
            #expect(try #require(tokens) < 0.5)
        }
    }
}

/// Tokens still to take, shared by the hammering tasks.
private final class Remaining: Sendable {
    private let count: Mutex<Int>
    init(_ count: Int) { self.count = Mutex(count) }
    func take() -> Bool {
        count.withLock { count in
            guard count > 0 else { return false }
            count -= 1
            return true
        }
    }
}

/// Fair jobs past their lanes (a `LaneGate` bound) book their tokens in the order they ask: racing for them, the
/// waiters that had asked first lost most (a longer wait drew a longer jitter).
@Suite struct RateLimiterBookingTests {
    @Test func fairJobsGetTheirTokensInTheOrderTheyAsked() async throws {
        try await RateLimiterTests.withPrefix { prefix in
            let redis = try RateLimiterTests.redis()
            defer { redis.close() }
            let limiter = RateLimiter(redis: redis, prefix: prefix)
            let queue = JobQueue(redis: redis, catalog: JobCatalog(kinds: []), options: QueueOptions(prefix: prefix))
            // What the bucket holds as of its last call (negative: the tokens it owes to bookings).
            func held() async throws -> Double {
                try await redis.send(["HGET", limiter.key("booked"), "tokens"]).string.flatMap(Double.init) ?? 1
            }
            // The burst is spent: every waiter below waits for the refill (one a second).
            try await limiter.acquire(name: "booked", perSecond: 1, burst: 1)
            let order = Arrivals()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<5 {
                    let before = try await held()
                    let gate = LaneGate(queue: queue, shard: "default", id: JobID.random())
                    group.addTask {
                        try await LaneGate.$current.withValue(gate) {
                            try await limiter.acquire(name: "booked", perSecond: 1, burst: 1)
                        }
                        order.append(index)
                    }
                    // Each asks once the one before has asked (the bucket owes one more token), however loaded the
                    // machine: the order of asking is known.
                    #expect(try await eventually(timeout: .seconds(10)) { try await held() < before - 0.5 })
                }
                try await group.waitForAll()
            }
            #expect(order.all == Array(0..<5))
        }
    }

    final class Arrivals: Sendable {
        private let list = Mutex<[Int]>([])
        func append(_ index: Int) { list.withLock { $0.append(index) } }
        var all: [Int] { list.withLock { $0 } }
    }
}
