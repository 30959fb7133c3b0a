import Foundation
import JSON
import Queue
import Redis
import TestSupport
import Testing

/// Real worker processes, killed and stopped the hard and the polite way.
@Suite(.serialized) struct ChaosTests {
    static let shortLeaseNoop = """
        # noop with a 3 s lease, so a killed worker's jobs come back quickly in tests
        queue: default
        timeout: 10s
        visibility_timeout: 3s
        attempts: 5
        backoff: { type: fixed, delay: 100ms }
        retention: { succeeded: 1h, failed: 1d }
        """

    /// A prefix of the test's own, the short-lease job files, the workers' environment and the queue as they see it.
    static func shortLeaseRun() throws -> (redis: RedisClient, prefix: String, environment: [String: String], queue: JobQueue) {
        let redis = try RedisClient(url: TestServices.redisURL)
        let prefix = "chaos-\(UUID().uuidString.prefix(8))"
        let jobs = try CarbScanBinary.jobsDirectory(noop: Self.shortLeaseNoop)
        // No database: these workers run noop jobs only (an empty DATABASE_URL is unset, whatever the runner has).
        let environment = [
            "REDIS_URL": TestServices.redisURL, "CARBSCAN_PREFIX": prefix, "CARBSCAN_JOBS_DIR": jobs.path, "DATABASE_URL": "",
        ]
        let queue = JobQueue(redis: redis, catalog: try JobCatalog.load(directory: jobs.path), options: QueueOptions(prefix: prefix))
        return (redis, prefix, environment, queue)
    }

    @Test func killingAWorkerMidRunLosesNoJob() async throws {
        let (redis, prefix, environment, queue) = try Self.shortLeaseRun()
        let effects = "\(prefix):effects"
        var workers: [RunningProcess] = []
        defer {
            for worker in workers { worker.signal(SIGKILL) }
            Task { await removeKeys(prefix: prefix, redis: redis) }
        }
        for _ in 0..<3 {
            workers.append(try CarbScanBinary.start(["work", "--queues", "default", "--concurrency", "10"], environment: environment))
        }
        // All three must be reading before the jobs arrive: on a loaded run one may still be starting when the
        // others are already a fifth through.
        #expect(try await eventually(timeout: .seconds(30)) { try await queue.consumers() == 3 })
        let count = 3000
        // 3,000 jobs of 100 ms on 30 slots: a run of about 10 s, long enough that the kill lands mid-run even when a
        // loaded test run is slow to notice the first tenth done (at 40 ms on 60 slots, one full run once missed it;
        // at 100 ms on 60 slots, a 5 s run, a loaded clean-clone run once found every worker holding nothing).
        let payload = JSONValue.object(["record": .string(effects), "sleepMs": .int(100)])
        let ids = try await queue.enqueue(Array(repeating: (kind: "noop", payload: payload, options: EnqueueOptions()), count: count))
            .compactMap(\.id)
        #expect(ids.count == count)

        // Let the run get going, then kill -9 mid-run the worker holding the most deliveries.
        #expect(try await eventually(timeout: .seconds(30)) { try await redis.send(["LLEN", effects]).int ?? 0 >= count / 10 })
        func pending() async throws -> [(name: String, pending: Int)] {
            let consumers = try await redis.send(["XINFO", "CONSUMERS", queue.keys("default").stream, QueueKeys.group]).array ?? []
            return consumers.map { consumer in
                let fields = consumer.array ?? []
                return (fields.count > 1 ? fields[1].string ?? "" : "", fields.count > 3 ? fields[3].int ?? 0 : 0)
            }
        }
        let busiest = try await pending().max { $0.pending < $1.pending }
        let victim = try #require(workers.first { busiest?.name.contains(":\($0.pid):") == true })
        victim.signal(SIGKILL)
        // What it held at the kill: its deliveries not yet acknowledged, read before waiting for its exit. Its leases
        // run out after 3 s and the survivors then claim its deliveries: in a loaded CI run the wait for the exit
        // once outlasted that, and the victim was read holding nothing.
        let inFlightAtKill = try await pending().first { $0.name.contains(":\(victim.pid):") }?.pending ?? 0
        _ = await victim.waitForExit(timeout: .seconds(5))
        #expect(inFlightAtKill > 0, "the kill should have caught jobs in flight")

        // Every job completes: the victim's leases expire (3 s) and the survivors take its jobs.
        #expect(try await eventually(timeout: .seconds(60)) { try await queue.defaultStats().succeededTotal >= count })
        let recorded = (try await redis.send(["LRANGE", effects, "0", "-1"]).array ?? []).compactMap(\.string)
        let distinct = Set(recorded)
        #expect(distinct == Set(ids.map(\.rawValue)), "every enqueued job ran")
        let reruns = recorded.count - distinct.count
        #expect(reruns <= inFlightAtKill, "\(reruns) re-runs, \(inFlightAtKill) in flight at the kill")
        for id in ids.prefix(50) { #expect(try await queue.record(id)?.status == .succeeded) }
        let stats = try await queue.defaultStats()
        #expect(stats.failedTotal == 0)
        #expect(stats.queued == 0 && stats.running == 0)
    }

    /// The worker running the queues' upkeep is killed: when its lease (2 s here) runs out, the other worker takes the
    /// upkeep over, and a delayed job enqueued after the kill still runs.
    @Test func killingTheUpkeepLeaderHandsTheUpkeepToAnother() async throws {
        let (redis, prefix, environment, queue) = try Self.shortLeaseRun()
        var workers: [RunningProcess] = []
        defer {
            for worker in workers { worker.signal(SIGKILL) }
            Task { await removeKeys(prefix: prefix, redis: redis) }
        }
        for _ in 0..<2 {
            workers.append(try CarbScanBinary.start(["work", "--queues", "default", "--upkeep-lease", "2"], environment: environment))
        }
        func holder() async throws -> String? { try await redis.send(["GET", queue.upkeepLeaseKey]).string }
        #expect(
            try await eventually(timeout: .seconds(30)) {
                let consumers = try await queue.consumers()
                return try await holder() != nil && consumers == 2
            })
        let leaderName = try await holder() ?? ""
        let leader = try #require(workers.first { leaderName.contains(":\($0.pid):") })
        leader.signal(SIGKILL)
        _ = await leader.waitForExit(timeout: .seconds(5))
        let id = try #require(try await queue.enqueue("noop", payload: .object([:]), options: EnqueueOptions(delay: .milliseconds(500))).id)
        #expect(try await eventually(timeout: .seconds(30)) { try await queue.record(id)?.status == .succeeded })
        let successor = try await holder() ?? ""
        #expect(!successor.contains(":\(leader.pid):") && workers.contains { successor.contains(":\($0.pid):") })
    }

    @Test func sigtermHandsUnfinishedJobsBackAndFailsNone() async throws {
        let (redis, prefix, environment, queue) = try Self.shortLeaseRun()
        defer { Task { await removeKeys(prefix: prefix, redis: redis) } }
        let workers = try (0..<2).map { _ in
            try CarbScanBinary.start(["work", "--queues", "default", "--concurrency", "5", "--grace", "2"], environment: environment)
        }
        // A test that fails half-way must not leave its workers running (they are SIGTERMed below when all goes well).
        defer { for worker in workers where worker.process.isRunning { worker.signal(SIGKILL) } }
        #expect(try await eventually(timeout: .seconds(30)) { try await queue.consumers() == 2 })
        // 4 quick jobs finish within the grace period; 6 long ones cannot.
        let quick = JSONValue.object(["sleepMs": .int(1000)])
        let long = JSONValue.object(["sleepMs": .int(20_000)])
        let quickIDs = try await queue.enqueue(Array(repeating: (kind: "noop", payload: quick, options: EnqueueOptions()), count: 4))
            .compactMap(\.id)
        let longIDs = try await queue.enqueue(Array(repeating: (kind: "noop", payload: long, options: EnqueueOptions()), count: 6))
            .compactMap(\.id)
        #expect(try await eventually(timeout: .seconds(30)) { try await queue.defaultStats().running == 10 })
        let stopped = ContinuousClock.now
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers { #expect(await worker.waitForExit(timeout: .seconds(15)) == 0) }
        // Handed back at the end of the 2 s grace, not after the jobs' 20 s or a lease timeout.
        #expect(ContinuousClock.now - stopped < .seconds(10))
        for id in quickIDs { #expect(try await queue.record(id)?.status == .succeeded) }
        for id in longIDs {
            let record = try #require(try await queue.record(id))
            #expect(record.status == .queued)
            #expect(record.attempts == 0)
        }
        let stats = try await queue.defaultStats()
        #expect(stats.failedTotal == 0 && stats.dead == 0 && stats.retrying == 0)
        #expect(stats.queued == 6 && stats.running == 0)
        let output = workers.map(\.output).joined()
        #expect(output.contains("handing back jobs"))
        #expect(!output.contains("\"level\":\"error\""))
    }

    @Test func aWorkerStartedWithoutRedisWaitsForItAndThenWorks() async throws {
        let port = CarbScanBinary.freePort()
        let url = "redis://127.0.0.1:\(port)/0"
        let jobs = try CarbScanBinary.jobsDirectory(noop: Self.shortLeaseNoop)
        let worker = try CarbScanBinary.start(
            ["work", "--queues", "default"], environment: ["REDIS_URL": url, "CARBSCAN_JOBS_DIR": jobs.path, "CARBSCAN_PREFIX": "late"])
        defer { worker.signal(SIGKILL) }
        #expect(try await eventually(timeout: .seconds(30)) { worker.output.contains("connecting to redis failed") })
        #expect(worker.process.isRunning)
        let server = try PrivateRedis.start(port: port)
        defer { server.stop() }
        let redis = try RedisClient(url: url)
        defer { redis.close() }
        let queue = JobQueue(redis: redis, catalog: try JobCatalog.load(directory: jobs.path), options: QueueOptions(prefix: "late"))
        var id: JobID?
        _ = try await eventually(timeout: .seconds(30)) {
            id = try? await queue.enqueue("noop", payload: .object([:])).id
            return id != nil
        }
        let jobID = try #require(id)
        // Both pooled connections must reconnect; one may still be in its backoff window, so errors count as "not yet".
        #expect(try await eventually(timeout: .seconds(30)) { (try? await queue.record(jobID))?.status == .succeeded })
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(10)) == 0)
    }

    /// SIGTERM while Redis is unreachable at start-up: the connect loop used to ignore it (still running 15 s later).
    @Test func aWorkerWaitingForRedisStopsAtOnceOnSIGTERM() async throws {
        let url = "redis://127.0.0.1:\(CarbScanBinary.freePort())/0"
        let jobs = try CarbScanBinary.jobsDirectory(noop: Self.shortLeaseNoop)
        let worker = try CarbScanBinary.start(
            ["work", "--queues", "default"], environment: ["REDIS_URL": url, "CARBSCAN_JOBS_DIR": jobs.path])
        defer { worker.signal(SIGKILL) }
        #expect(try await eventually(timeout: .seconds(30)) { worker.output.contains("connecting to redis failed") })
        let signalled = ContinuousClock.now
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(10)) == 0)
        #expect(ContinuousClock.now - signalled < .seconds(8))
    }

    /// SIGTERM while busy with Redis gone: the worker used to retry recording outcomes for ever. It ends within the
    /// grace period plus a bound, and leaves the unrecorded outcomes to the leases.
    @Test func aBusyWorkerWhoseRedisIsGoneStopsWithinItsGracePeriodOnSIGTERM() async throws {
        let port = CarbScanBinary.freePort()
        let url = "redis://127.0.0.1:\(port)/0"
        let server = try PrivateRedis.start(port: port)
        defer { server.stop() }
        let jobs = try CarbScanBinary.jobsDirectory(noop: Self.shortLeaseNoop)
        let redis = try RedisClient(url: url)
        defer { redis.close() }
        let queue = JobQueue(redis: redis, catalog: try JobCatalog.load(directory: jobs.path), options: QueueOptions(prefix: "gone"))
        let worker = try CarbScanBinary.start(
            ["work", "--queues", "default", "--grace", "1"],
            environment: ["REDIS_URL": url, "CARBSCAN_JOBS_DIR": jobs.path, "CARBSCAN_PREFIX": "gone"])
        defer { worker.signal(SIGKILL) }
        // Each handler pushes to `started` as it begins (noop's latency probe): a job reserved but not yet started
        // when Redis goes (a loaded machine) would leave no outcome to record.
        func payload(sleepMs: Int) -> JSONValue {
            ["sleepMs": .int(sleepMs), "stamp": .double(Date().timeIntervalSince1970), "latency": "started"]
        }
        var ids: [JobID] = []
        _ = try await eventually(timeout: .seconds(30)) {
            (try? await queue.enqueue("noop", payload: payload(sleepMs: 400), options: EnqueueOptions(indexed: true)).id).map {
                ids.append($0)
            }
            return !ids.isEmpty
        }
        let long = try #require(
            try await queue.enqueue("noop", payload: payload(sleepMs: 8000), options: EnqueueOptions(indexed: true)).id)
        #expect(try await eventually(timeout: .seconds(30)) { try await redis.send(["LLEN", "started"]).int == 2 })
        #expect(try await queue.record(long)?.status == .running)
        // Redis goes away while both run; the short job finishes and cannot be recorded.
        server.stop()
        try await Task.sleep(for: .milliseconds(600))
        let signalled = ContinuousClock.now
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(15)) == 0)
        // Grace 1 s, 2 s for handlers that ignore cancellation, then 3 s of tries to record: well under 8 s.
        #expect(ContinuousClock.now - signalled < .seconds(8), "\(ContinuousClock.now - signalled)")
        #expect(worker.output.contains("their leases hand the jobs back"))
    }

    /// A poison message for real: a job whose handler traps its whole worker process, under two workers that a
    /// supervisor (this test) restarts. It is buried after its attempts with a reason that says so, and every other
    /// job, some of them lost with the crashed workers, still finishes once.
    @Test func aJobThatCrashesItsWorkerIsBuriedAndTheOthersFinish() async throws {
        let redis = try RedisClient(url: TestServices.redisURL)
        let prefix = "poison-\(UUID().uuidString.prefix(8))"
        let jobs = try CarbScanBinary.jobsDirectory(noop: Self.shortLeaseNoop.replacingOccurrences(of: "attempts: 5", with: "attempts: 2"))
        // No crash backtrace: symbolicating one keeps a crashed worker alive for seconds on a loaded machine.
        let environment = [
            "REDIS_URL": TestServices.redisURL, "CARBSCAN_PREFIX": prefix, "CARBSCAN_JOBS_DIR": jobs.path, "SWIFT_BACKTRACE": "enable=no",
        ]
        let queue = JobQueue(redis: redis, catalog: try JobCatalog.load(directory: jobs.path), options: QueueOptions(prefix: prefix))
        let arguments = ["work", "--queues", "default", "--concurrency", "4"]
        var workers = [
            try CarbScanBinary.start(arguments, environment: environment), try CarbScanBinary.start(arguments, environment: environment),
        ]
        defer {
            for worker in workers { worker.signal(SIGKILL) }
            Task { await removeKeys(prefix: prefix, redis: redis) }
        }
        #expect(try await eventually(timeout: .seconds(30)) { try await queue.consumers() == 2 })
        let effects = "\(prefix):effects"
        let poison = try #require(try await queue.enqueue("noop", payload: ["fail": "crash"], options: EnqueueOptions(indexed: true)).id)
        let others = try await queue.enqueue(
            Array(repeating: (kind: "noop", payload: ["sleepMs": 300, "record": .string(effects)], options: EnqueueOptions()), count: 20))
        var restarts = 0
        let settled = try await eventually(timeout: .seconds(60)) {
            // The supervisor: a worker that died is started again.
            for index in workers.indices where !workers[index].process.isRunning {
                workers[index] = try CarbScanBinary.start(arguments, environment: environment)
                restarts += 1
            }
            let done = try await redis.send(["LLEN", effects]).int ?? 0
            return try await queue.record(poison)?.status == .failed && done >= others.count
        }
        #expect(settled)
        // Each of its two deliveries crashed its worker: restarted ones, and one that may have crashed since the last look.
        var crashes = 0
        _ = try await eventually(timeout: .seconds(10)) {
            crashes = restarts + workers.filter { !$0.process.isRunning }.count
            return crashes >= 2
        }
        #expect(crashes >= 2, "the poison job crashed \(crashes) workers")
        let record = try #require(try await queue.record(poison))
        #expect(record.status == .failed && record.inDeadSet)
        #expect(record.error?.contains("crashed") == true, "\(record.error ?? "")")
        let ran = try await redis.send(["LRANGE", effects, "0", "-1"]).array?.compactMap(\.string) ?? []
        #expect(Set(ran).count == others.count)
        #expect(try await queue.defaultStats().dead == 1)
    }
}
