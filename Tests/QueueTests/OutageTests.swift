import Foundation
import Logging
import Queue
import Redis
import Synchronization
import TestSupport
import Testing

/// What the engine does when Redis or a job's dependencies go away and come back (issue 18's "found broken").
@Suite struct OutageTests {
    /// Redis restarted without persistence (or failed over to an empty replica) loses the streams and their
    /// consumer groups. The worker made the groups only at start-up, so every read failed with NOGROUP for good.
    @Test func aWorkerKeepsWorkingWhenRedisComesBackEmpty() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let (worker, task) = env.startWorker(blockTimeout: .milliseconds(500))
        let before = try await env.enqueue(options: EnqueueOptions(indexed: true))
        #expect(try await eventually { try await env.status(before) == .succeeded })
        // Every key of the queue is gone, as after an empty restart (the other tests' keys are left alone).
        _ = try await env.redis.unlinkKeys(matching: "\(env.prefix):*")
        let after = try await env.enqueue(options: EnqueueOptions(indexed: true))
        #expect(try await eventually(timeout: .seconds(10)) { try await env.status(after) == .succeeded })
        worker.stop()
        try await task.value
    }

    /// A stream deleted under an idle worker's blocked read (an empty restart, a `FLUSHALL`, an operator's cleanup)
    /// ends the read with `UNBLOCKED the stream key no longer exists`: the worker makes the group again and waits on,
    /// as on `NOGROUP`. It logged an error and backed off before it recovered.
    @Test func aStreamDeletedUnderABlockedReadIsMadeAgainQuietly() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let lines = LogLines()
        let (worker, task) = env.startWorker(blockTimeout: .seconds(10), logger: lines.logger)
        let stream = env.queue.keys("default").stream
        #expect(try await eventually { (try? await env.redis.send(["XINFO", "CONSUMERS", stream, QueueKeys.group]))?.array?.count == 1 })
        try await Task.sleep(for: .milliseconds(200))
        _ = try await env.redis.send(["DEL", stream])
        #expect(try await eventually { (try? await env.redis.send(["XINFO", "GROUPS", stream]))?.array?.count == 1 })
        let id = try await env.enqueue(options: EnqueueOptions(indexed: true))
        #expect(try await eventually { try await env.status(id) == .succeeded })
        worker.requestStop()
        try await task.value
        #expect(lines.count(atLeast: .warning) == 0, "\(lines.all(atLeast: .warning))")
    }

    /// Lease renewal and reclaim meet NOGROUP too; they make the group again instead of failing every second.
    @Test func reclaimAndHeartbeatRecreateAMissingGroup() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        #expect(try await env.queue.reclaimExpiredLeases(queue: "default").isEmpty)
        let groups = try await env.redis.send(["XINFO", "GROUPS", env.queue.keys("default").stream]).array ?? []
        #expect(groups.count == 1)
    }

    /// A job that fails because a dependency is unreachable waits for it and keeps its attempts: three outage
    /// failures of a kind with three attempts leave it retrying with none spent, where it used to be dead.
    @Test func aJobFailingOnAnOutageWaitsWithoutSpendingItsAttempts() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let (worker, task) = env.startWorker()
        let id = try await env.enqueue(["fail": "outage"], options: EnqueueOptions(indexed: true))
        #expect(try await eventually { try await env.queue.record(id)?.errors.count ?? 0 >= 3 })
        worker.stop()
        try await task.value
        let record = try #require(try await env.queue.record(id))
        #expect(record.status == .retrying)
        #expect(record.attempts == 0)
        #expect(!record.inDeadSet)
        #expect(record.errors.allSatisfy { $0.error.contains("dependency unavailable") })
        // The wait doubles per outage in a row (0.8–1.2 s, then ×2, ×4): the third is 3.2–4.8 s.
        let wait = try #require(record.runAt).timeIntervalSince(try #require(record.errors.last).at)
        #expect(wait > 3.1 && wait < 4.9, "waited \(wait) s")
        let stats = try await env.stats()
        #expect(stats.failedTotal == 0 && stats.dead == 0 && stats.retrying == 1)
    }

    /// Redis full (`maxmemory` with `noeviction`): an enqueue is refused clearly (an outage to the API: 503), while
    /// workers still record what they hold; before, their outcomes were refused too and the jobs stayed leased.
    @Test func aFullRedisRefusesEnqueuesButStillTakesOutcomes() async throws {
        let server = try PrivateRedis.start(["--maxmemory-policy", "noeviction"])
        defer { server.stop() }
        let env = try TestEnvironment(redisURL: server.url)
        defer { Task { await env.cleanUp() } }
        try await env.queue.prepare(queues: ["default"])
        for _ in 0..<3 { _ = try await env.enqueue(options: EnqueueOptions(indexed: true)) }
        let held = try await env.queue.reserve(queue: "default", count: 3, consumer: "w")
        #expect(held.count == 3)
        // Full: a limit below what Redis already uses, so every write that may add memory is refused.
        _ = try await env.redis.send(["CONFIG", "SET", "maxmemory", "1"])
        await #expect(throws: RedisError.self) { try await env.enqueue(options: EnqueueOptions(indexed: true)) }
        do {
            _ = try await env.enqueue()
            Issue.record("an enqueue into a full Redis went in")
        } catch let error as RedisError {
            #expect(error.isOutOfMemory && error.isOutage, "\(error)")
        }
        try await env.queue.record(held.map { .succeeded($0, result: "null", retention: .seconds(60)) })
        for job in held { #expect(try await env.status(job.id) == .succeeded) }
        #expect(try await env.stats().running == 0)
    }

    /// Redis away for a few seconds: each of the worker's loops logs one line when it starts failing and one when
    /// it recovers (not one per try, per queue), and the worker takes jobs again within about a second.
    @Test func aRedisOutageIsLoggedOncePerLoopAndRecoveredFromWithinASecond() async throws {
        let redis = try RedisConfiguration(url: TestServices.redisURL)
        let proxy = try await FaultProxy.start(to: redis.host, port: redis.port)
        defer { proxy.stop() }
        let lines = LogLines()
        let env = try TestEnvironment(
            kinds: [
                "noop": TestEnvironment.noop,
                "other": TestEnvironment.noop.replacingOccurrences(of: "queue: default", with: "queue: other"),
            ],
            redisURL: "redis://\(proxy.url)/\(redis.database)")
        defer { Task { await env.cleanUp() } }
        let (worker, task) = env.startWorker(blockTimeout: .milliseconds(300), logger: lines.logger)
        let first = try await env.enqueue(options: EnqueueOptions(indexed: true))
        #expect(try await eventually { try await env.status(first) == .succeeded })

        proxy.cut()
        try await Task.sleep(for: .seconds(4))
        let errorsDuringOutage = lines.count(atLeast: .warning)
        proxy.restore()
        let restored = ContinuousClock.now
        // The first enqueue after the outage may still meet the broken connection; the client reconnects for the next.
        var id: JobID?
        _ = try await eventually(timeout: .seconds(5)) {
            id = try? await env.enqueue(options: EnqueueOptions(indexed: true))
            return id != nil
        }
        let second = try #require(id)
        #expect(try await eventually(timeout: .seconds(5)) { (try? await env.status(second)) == .succeeded })
        let recovery = ContinuousClock.now - restored
        worker.stop()
        try await task.value
        // Fetch, promote, reclaim, the connection's own line, lease renewal: a handful, not hundreds.
        #expect(errorsDuringOutage <= 8, "\(lines.all(atLeast: .warning))")
        #expect(errorsDuringOutage >= 1)
        #expect(recovery < .seconds(3), "took \(recovery)")
    }
}

/// Log lines kept in memory, for tests that count them.
final class LogLines: Sendable {
    private let lines = Mutex<[(Logger.Level, String)]>([])

    var logger: Logger {
        let sink = self
        var logger = Logger(label: "test") { _ in Handler(sink: sink) }
        logger.logLevel = .info
        return logger
    }

    func count(atLeast level: Logger.Level) -> Int { lines.withLock { $0.filter { $0.0 >= level }.count } }
    func all(atLeast level: Logger.Level) -> [String] { lines.withLock { $0.filter { $0.0 >= level }.map(\.1) } }

    struct Handler: LogHandler {
        let sink: LogLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            sink.lines.withLock { $0.append((event.level, "\(event.message)")) }
        }
    }
}
