import Foundation
import JSON
import Queue
import Redis
import TestSupport
import Testing

/// `global_limit:` across real `carbscan work` processes: the second worker runs nothing while the first holds the
/// queue's permits, and gets them once the first is killed and its lease runs out.
@Suite(.serialized) struct GlobalLimitProcessTests {
    @Test func aKilledWorkersPermitsLapseWithItsLease() async throws {
        let redis = try RedisClient(url: TestServices.redisURL)
        let prefix = "glimit-\(UUID().uuidString.prefix(8))"
        // The short-lease noop (3 s leases, so the permits' lease is 3 s too) limited to 2 across processes.
        let jobs = try CarbScanBinary.jobsDirectory(noop: ChaosTests.shortLeaseNoop + "\nglobal_limit: 2\n")
        let environment = [
            "REDIS_URL": TestServices.redisURL, "CARBSCAN_PREFIX": prefix, "CARBSCAN_JOBS_DIR": jobs.path, "DATABASE_URL": "",
        ]
        let queue = JobQueue(redis: redis, catalog: try JobCatalog.load(directory: jobs.path), options: QueueOptions(prefix: prefix))
        var workers: [RunningProcess] = []
        defer {
            for worker in workers { worker.signal(SIGKILL) }
            try? FileManager.default.removeItem(at: jobs)
            Task { await removeKeys(prefix: prefix, redis: redis) }
        }
        let keys = queue.keys("default")
        func held() async throws -> [Int] {
            (try await redis.send(["HVALS", keys.limitHeld]).array ?? []).compactMap { Int($0.string ?? "") }
        }
        workers.append(try CarbScanBinary.start(["work", "--queues", "default", "--concurrency", "10"], environment: environment))
        #expect(try await eventually(timeout: .seconds(30)) { try await queue.consumers() == 1 })
        // A minute: they still run, holding both permits, however slowly a loaded machine starts the second worker.
        let long = JSONValue.object(["sleepMs": .int(60_000)])
        for _ in 0..<2 { _ = try await queue.enqueue("noop", payload: long) }
        #expect(try await eventually(timeout: .seconds(15)) { try await held() == [2] }, "the first worker holds both permits")
        let listed = try await CarbScanBinary.run(["queues"], environment: environment)
        #expect(listed.status == 0 && listed.stdout.contains("global") && listed.stdout.contains(" 2/2"), "\(listed.stdout)")

        workers.append(try CarbScanBinary.start(["work", "--queues", "default", "--concurrency", "10"], environment: environment))
        #expect(try await eventually(timeout: .seconds(30)) { try await queue.consumers() == 2 })
        let done = "\(prefix):done"
        for _ in 0..<3 { _ = try await queue.enqueue("noop", payload: .object(["record": .string(done)])) }
        // Both permits are the first worker's: the second, with 10 free slots, starts none of the 3.
        try await Task.sleep(for: .seconds(1))
        #expect(try await redis.send(["LLEN", done]).int == 0, "a job ran past the global limit")
        #expect(try await held() == [2], "the first worker's jobs ended before the check")

        workers[0].signal(SIGKILL)
        let killed = ContinuousClock.now
        // Its permits lapse within their 3 s lease (plus a heartbeat's slack); the second worker then runs the 3 quick
        // jobs (the 2 long ones come back to it later, at their own leases' end), never more than 2 held at once.
        var most = 0
        let finished = try await eventually(timeout: .seconds(30)) {
            most = max(most, try await held().reduce(0, +))
            return try await redis.send(["LLEN", done]).int == 3
        }
        #expect(finished)
        #expect(ContinuousClock.now - killed < .seconds(25))
        #expect(most <= 2, "\(most) permits held at once under a global limit of 2")
    }
}
