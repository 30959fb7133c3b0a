import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Redis

/// `RedisClient.executor`: a task that prefers it runs on a connection thread and keeps its commands on that
/// connection, so awaiting one command after another costs no thread switch.
@Suite struct RedisExecutorTests {
    @Test func aTaskPreferringTheExecutorStaysOnOneConnectionAndItsThread() async throws {
        let redis = try TestRedis.client(poolSize: 4)
        defer { redis.close() }
        let key = TestRedis.namespace()
        #expect(!redis.isOnConnectionThread)
        let (ids, onThread) = try await withTaskExecutorPreference(redis.executor) {
            var ids = Set<Int>()
            var onThread = true
            for _ in 0..<40 {
                ids.insert(try #require(try await redis.send("CLIENT", "ID").int))
                try await redis.send("INCR", key)
                onThread = onThread && redis.isOnConnectionThread
            }
            return (ids, onThread)
        }
        // Resumed on the connection's thread after every reply, and every command went to that one connection
        // (the pool's other three take turns otherwise).
        #expect(onThread)
        #expect(ids.count == 1)
        #expect(try await redis.send("GET", key) == .bulk("40"))
        // Other callers still share the whole pool.
        var others = Set<Int>()
        for _ in 0..<8 { others.insert(try #require(try await redis.send("CLIENT", "ID").int)) }
        #expect(others.count == 4)
        try await redis.send("DEL", key)
    }

    /// A task on the executor whose commands go out right on the thread (nothing else waiting) still lets another
    /// caller of the same connection in at its next command, not after its whole loop. The loop runs until the other
    /// caller is answered, with a bound far beyond what a fair turn needs even on a loaded machine: reaching the bound
    /// means the other caller waited for the whole loop.
    @Test func aTaskCallingInALoopOnTheExecutorLetsOtherCallersIn() async throws {
        let redis = try TestRedis.client(poolSize: 1)
        defer { redis.close() }
        let key = TestRedis.namespace()
        let bound = 200_000
        let done = Atomic<Int>(0)
        let answered = Atomic<Bool>(false)
        let loop = Task {
            try await withTaskExecutorPreference(redis.executor) {
                while done.load(ordering: .relaxed) < bound, !answered.load(ordering: .relaxed) {
                    try await redis.send("INCR", key)
                    done.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(try await eventually(timeout: .seconds(30)) { done.load(ordering: .relaxed) >= 100 })
        #expect(try await redis.send("PING") == .status("PONG"))
        answered.store(true, ordering: .relaxed)
        try await loop.value
        let total = done.load(ordering: .relaxed)
        #expect(total < bound, "answered only after the loop's \(total) commands")
        #expect(try await redis.send("GET", key) == .bulk(String(total)))
        try await redis.send("DEL", key)
    }

    /// A connection dropped under a command sent right on the thread: that command fails, the next reconnects.
    @Test func aConnectionDroppedUnderATaskOnTheExecutorIsReopened() async throws {
        let redis = try TestRedis.client(poolSize: 1)
        defer { redis.close() }
        let (first, second, recovered) = try await withTaskExecutorPreference(redis.executor) {
            let first = try #require(try await redis.send("CLIENT", "ID").int)
            // Killed by another connection, so this one learns of it only on its next command.
            let killer = try TestRedis.client(poolSize: 1)
            defer { killer.close() }
            try await killer.send("CLIENT", "KILL", "ID", String(first))
            var failures = 0
            var second: Int?
            while second == nil, failures < 3 {
                do { second = try await redis.send("CLIENT", "ID").int } catch { failures += 1 }
            }
            return (first, second, failures <= 1)
        }
        #expect(recovered)
        #expect(second != nil && second != first)
    }

    /// Many tasks on the one thread: their commands are pipelined together, and each gets its own reply.
    @Test func concurrentTasksOnTheExecutorGetTheirOwnReplies() async throws {
        let redis = try TestRedis.client(poolSize: 2)
        defer { redis.close() }
        try await TestRedis.echoConcurrently(redis, count: 500, executor: redis.executor) {
            #expect(redis.isOnConnectionThread)
        }
    }

    /// A closed client's thread stops; a task that prefers it must go on elsewhere, not wait forever.
    @Test func aTaskOutlivingItsClientGoesOnInTheCooperativePool() async throws {
        let redis = try TestRedis.client(poolSize: 1)
        let outcome = Mutex<String?>(nil)
        // Detached and watched from here, so that a task stranded on the stopped thread fails the test, not hangs it.
        Task.detached {
            let text = await withTaskExecutorPreference(redis.executor) { () async -> String in
                do {
                    try await redis.send("PING")
                    redis.close()
                    try await Task.sleep(for: .milliseconds(50))
                    try await redis.send("PING")
                    return "answered after close"
                } catch let error as RedisError {
                    return "\(error.code)"
                } catch {
                    return "\(error)"
                }
            }
            outcome.withLock { $0 = text }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while outcome.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(outcome.withLock { $0 } == "closed")
    }
}
