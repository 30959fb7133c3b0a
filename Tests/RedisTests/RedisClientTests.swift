import Foundation
import Redis
import TestSupport
import Testing

@Suite struct RedisClientTests {
    @Test func sendsCommandsAndDecodesReplies() async throws {
        let redis = try TestRedis.client()
        defer { redis.close() }
        let key = TestRedis.namespace()
        #expect(try await redis.send("SET", key, "héllo ✓") == .status("OK"))
        #expect(try await redis.send("GET", key) == .bulk("héllo ✓"))
        #expect(try await redis.send("GET", key + ":missing") == .null)
        #expect(try await redis.send("RPUSH", key + ":l", "a", "b") == .integer(2))
        #expect(try await redis.send("LRANGE", key + ":l", "0", "-1") == .array([.bulk("a"), .bulk("b")]))
        try await redis.send("DEL", key, key + ":l")
    }

    @Test func errorRepliesThrowServerErrors() async throws {
        let redis = try TestRedis.client()
        defer { redis.close() }
        let key = TestRedis.namespace()
        try await redis.send("SET", key, "text")
        await #expect { try await redis.send("INCR", key) } throws: { error in
            (error as? RedisError)?.code == .server && (error as? RedisError)?.message.contains("not an integer") == true
        }
        try await redis.send("DEL", key)
    }

    @Test func pipelineKeepsOrderAndReportsErrorsInPlace() async throws {
        let redis = try TestRedis.client()
        defer { redis.close() }
        let key = TestRedis.namespace()
        let replies = try await redis.pipeline([["SET", key, "1"], ["INCR", key], ["LPUSH", key, "x"], ["GET", key]])
        #expect(replies[0] == .status("OK"))
        #expect(replies[1] == .integer(2))
        guard case .error(let message) = replies[2] else {
            Issue.record("expected an error reply, got \(replies[2])")
            return
        }
        #expect(message.hasPrefix("WRONGTYPE"))
        #expect(replies[3] == .bulk("2"))
        try await redis.send("DEL", key)
    }

    /// Thousands of concurrent single commands are answered, each with its own reply (automatic pipelining
    /// must never hand one caller another's answer).
    @Test func concurrentCallsGetTheirOwnReplies() async throws {
        let redis = try TestRedis.client(poolSize: 2)
        defer { redis.close() }
        try await TestRedis.echoConcurrently(redis, count: 2000)
    }

    @Test func scriptsAreLoadedOnceAndReloadedAfterAFlush() async throws {
        let redis = try TestRedis.client(poolSize: 1)
        defer { redis.close() }
        let script = RedisScript(name: "test-add", source: "return tonumber(ARGV[1]) + \(Int.random(in: 1...1_000_000)) - 0")
        let first = try await redis.run(script, keys: [], arguments: ["1"])
        try await redis.send("SCRIPT", "FLUSH")
        let second = try await redis.run(script, keys: [], arguments: ["1"])
        #expect(first == second)
        #expect(first.int != nil)
        await #expect(throws: RedisError.self) {
            try await redis.run(RedisScript(name: "broken", source: "return redis.call('NOPE')"), keys: [], arguments: [])
        }
    }

    @Test func unreachableServerIsAConnectionError() async throws {
        let redis = RedisClient(configuration: RedisConfiguration(host: "127.0.0.1", port: 1, connectTimeout: .milliseconds(200)))
        defer { redis.close() }
        await #expect { try await redis.send("PING") } throws: { error in
            (error as? RedisError)?.code == .connection
        }
    }

    @Test func slowReplyIsATimeoutAndTheConnectionRecovers() async throws {
        let redis = try TestRedis.client(poolSize: 1, readTimeout: .milliseconds(200))
        defer { redis.close() }
        let key = TestRedis.namespace()
        // A blocking command sent through the pool (without announcing its block time) outlives the read timeout.
        await #expect { try await redis.send("BLPOP", key, "2") } throws: { error in
            (error as? RedisError)?.code == .timeout
        }
        try await Task.sleep(for: .milliseconds(150))  // past the first reconnect backoff
        #expect(try await redis.send("PING") == .status("PONG"))
    }

    @Test func reconnectsAfterTheServerDropsTheConnection() async throws {
        let redis = try TestRedis.client(poolSize: 1)
        defer { redis.close() }
        let admin = try TestRedis.client(poolSize: 1)
        defer { admin.close() }
        let id = try #require(try await redis.send("CLIENT", "ID").int)
        try await admin.send("CLIENT", "KILL", "ID", String(id))
        // The first call notices the dead socket; the client reconnects and later calls succeed.
        var answered = false
        for _ in 0..<20 where !answered {
            if (try? await redis.send("PING")) == .status("PONG") { answered = true } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(answered)
        #expect(try await redis.send("CLIENT", "ID").int != id)
    }

    /// A connection backing off after a failure fails fast until its window ends, unless another connection of the
    /// process has got through since: then Redis is back and it tries at once (after an outage, recovery took a
    /// connection's window on top of its caller's own backoff).
    @Test func aBackingOffConnectionTriesAtOnceWhenAnotherHasReconnected() async throws {
        let server = try RedisConfiguration(url: TestServices.redisURL)
        let proxy = try await FaultProxy.start(to: server.host, port: server.port)
        defer { proxy.stop() }
        func client(backoff: Duration) -> RedisClient {
            RedisClient(
                configuration: RedisConfiguration(
                    host: "127.0.0.1", port: proxy.port, poolSize: 1, reconnectBase: backoff, reconnectMax: backoff))
        }
        let quick = client(backoff: .milliseconds(50))
        defer { quick.close() }
        let slow = client(backoff: .seconds(30))
        defer { slow.close() }
        #expect(try await quick.send("PING") == .status("PONG"))
        #expect(try await slow.send("PING") == .status("PONG"))
        proxy.cut()
        // Each notices the dropped socket, then fails to connect: `slow` now waits 30 s before its next try.
        for redis in [quick, slow] {
            for _ in 0..<2 { _ = try? await redis.send("PING") }
        }
        await #expect(throws: RedisError.self) { try await slow.send("PING") }
        proxy.restore()
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await quick.send("PING") == .status("PONG"))
        #expect(try await slow.send("PING") == .status("PONG"))
    }

    @Test func blockingCommandsDoNotHoldUpThePool() async throws {
        let redis = try TestRedis.client(poolSize: 1)
        defer { redis.close() }
        let blocking = redis.blockingConnection()
        defer { blocking.close() }
        let key = TestRedis.namespace()
        let popped = Task { try await blocking.send(["BLPOP", key, "5"], blockFor: .seconds(5)) }
        try await Task.sleep(for: .milliseconds(100))
        // While BLPOP waits on the server, the pool still answers, and a push wakes the blocked call.
        #expect(try await redis.send("PING") == .status("PONG"))
        try await redis.send("RPUSH", key, "job")
        #expect(try await popped.value == .array([.bulk(key), .bulk("job")]))
    }

    @Test func unblockEndsABlockedCallAtOnce() async throws {
        let redis = try TestRedis.client(poolSize: 1)
        defer { redis.close() }
        let blocking = redis.blockingConnection()
        defer { blocking.close() }
        let key = TestRedis.namespace()
        let popped = Task { try await blocking.send(["BLPOP", key, "30"], blockFor: .seconds(30)) }
        // Unblocking acts on a command the server is blocked in: wait for that (a loaded run took over 200 ms to
        // connect and send).
        let blocked = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < blocked {
            let id = blocking.clientID
            if id != 0, try await redis.send("CLIENT", "LIST", "ID", String(id)).string?.contains("cmd=blpop") == true { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let started = ContinuousClock.now
        await blocking.unblock()
        #expect(try await popped.value == .null)
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}
