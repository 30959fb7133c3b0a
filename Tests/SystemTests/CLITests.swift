import Foundation
import Queue
import Redis
import TestSupport
import Testing

/// The operator's commands, run as a process: output, exit codes, and refusals of bad input.
@Suite struct CLITests {
    let prefix = "cli-\(UUID().uuidString.prefix(8))"
    var environment: [String: String] { environment(redisURL: TestServices.redisURL) }

    func environment(redisURL: String) -> [String: String] {
        [
            "REDIS_URL": redisURL, "CARBSCAN_PREFIX": prefix,
            "CARBSCAN_JOBS_DIR": CarbScanBinary.packageRoot.appendingPathComponent("jobs").path,
        ]
    }

    /// Also on a Redis Cluster, by one node's address: there `jobs enqueue` failed with `MOVED`, and `jobs stats`
    /// printed zeros.
    @Test(arguments: TestServices.redisURLs) func enqueuePrintsIdsAndShowAndStatsReportThem(redisURL: String) async throws {
        let environment = environment(redisURL: redisURL)
        let redis = try RedisClient(url: redisURL)
        defer { Task { await removeKeys(prefix: prefix, redis: redis) } }
        let enqueued = try await CarbScanBinary.run(
            ["jobs", "enqueue", "noop", "--payload", #"{"sleepMs": 1}"#, "--count", "3"], environment: environment)
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        #expect(enqueued.stderr.isEmpty, "a command's answer comes without log lines: \(enqueued.stderr)")
        let ids = enqueued.stdout.split(separator: "\n").map(String.init)
        #expect(ids.count == 3 && ids.allSatisfy { JobID(rawValue: $0) != nil })

        let shown = try await CarbScanBinary.run(["jobs", "show", ids[0], "--json"], environment: environment)
        #expect(shown.status == 0)
        let record = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
        #expect(record?["status"] as? String == "queued")
        #expect(record?["kind"] as? String == "noop")

        let stats = try await CarbScanBinary.run(["jobs", "stats", "--json"], environment: environment)
        let queues = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(queues.first { $0["queue"] as? String == "default" }?["queued"] as? Int == 3)
        let table = try await CarbScanBinary.run(["jobs", "stats"], environment: environment)
        #expect(table.stdout.contains("queued") && table.stdout.contains("default"))

        let delayed = try await CarbScanBinary.run(["jobs", "enqueue", "noop", "--delay", "600"], environment: environment)
        let delayedID = delayed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let retried = try await CarbScanBinary.run(["jobs", "retry", delayedID], environment: environment)
        #expect(retried.status == 0)
        #expect(retried.stdout.contains("scheduled"))
    }

    @Test(arguments: TestServices.redisURLs) func uniqueEnqueueReportsTheDuplicate(redisURL: String) async throws {
        let environment = environment(redisURL: redisURL)
        let redis = try RedisClient(url: redisURL)
        defer { Task { await removeKeys(prefix: prefix, redis: redis) } }
        let first = try await CarbScanBinary.run(["jobs", "enqueue", "noop", "--unique", "k1"], environment: environment)
        let second = try await CarbScanBinary.run(["jobs", "enqueue", "noop", "--unique", "k1"], environment: environment)
        #expect(second.status == 0)
        #expect(second.stdout == "duplicate of \(first.stdout)")
    }

    @Test func unknownKindIsRefusedWithANonZeroExit() async throws {
        let result = try await CarbScanBinary.run(["jobs", "enqueue", "nope"], environment: environment)
        #expect(result.status != 0)
        #expect(result.stderr.contains("unknown job kind 'nope'"))
        #expect(result.stdout.isEmpty)
    }

    @Test func aPayloadAgainstTheSchemaIsRefusedNamingTheField() async throws {
        let result = try await CarbScanBinary.run(
            ["jobs", "enqueue", "noop", "--payload", #"{"sleepMs": "soon"}"#], environment: environment)
        #expect(result.status != 0)
        #expect(result.stderr.contains("sleepMs"))
        let notJSON = try await CarbScanBinary.run(["jobs", "enqueue", "noop", "--payload", "{oops"], environment: environment)
        #expect(notJSON.status != 0)
        #expect(notJSON.stderr.contains("not valid JSON"))
    }

    @Test func anUnreachableRedisIsAClearError() async throws {
        var env = environment
        env["REDIS_URL"] = "redis://127.0.0.1:\(CarbScanBinary.freePort())/0"
        let result = try await CarbScanBinary.run(["jobs", "stats"], environment: env)
        #expect(result.status != 0)
        #expect(result.stderr.contains("Connection refused"))
    }

    @Test func anInvalidJobFileStopsStartUpWithFileLineAndReason() async throws {
        let jobs = try CarbScanBinary.jobsDirectory(noop: "queue: default\ntimeout: soon\n")
        var env = environment
        env["CARBSCAN_JOBS_DIR"] = jobs.path
        for command in [["work"], ["schedule"], ["jobs", "stats"]] {
            let result = try await CarbScanBinary.run(command, environment: env)
            #expect(result.status == 78)
            #expect(result.stderr.contains("noop.yml:2"))
            #expect(result.stderr.contains("timeout"))
        }
    }

    @Test func deadJobsAreListedRetriedAndDiscarded() async throws {
        let redis = try RedisClient(url: TestServices.redisURL)
        defer { Task { await removeKeys(prefix: prefix, redis: redis) } }
        let jobs = CarbScanBinary.packageRoot.appendingPathComponent("jobs").path
        let queue = JobQueue(redis: redis, catalog: try JobCatalog.load(directory: jobs), options: QueueOptions(prefix: prefix))
        try await queue.prepare(queues: ["default"])
        var ids: [JobID] = []
        for _ in 0..<3 {
            let id = try #require(try await queue.enqueue("noop", payload: .object([:])).id)
            let job = try #require(try await queue.reserve(queue: "default", count: 1, consumer: "t").first)
            try await queue.record([.dead(job, error: "provider said 400", retention: .seconds(600))])
            ids.append(id)
        }
        let listed = try await CarbScanBinary.run(["jobs", "dead", "list"], environment: environment)
        #expect(ids.allSatisfy { listed.stdout.contains($0.rawValue) })
        #expect(listed.stdout.contains("provider said 400"))
        #expect(try await CarbScanBinary.run(["jobs", "dead", "retry", ids[0].rawValue], environment: environment).status == 0)
        #expect(try await CarbScanBinary.run(["jobs", "dead", "discard", ids[1].rawValue], environment: environment).status == 0)
        #expect(try await CarbScanBinary.run(["jobs", "dead", "discard", ids[1].rawValue], environment: environment).status != 0)
        #expect(try await queue.record(ids[0])?.status == .queued)
        #expect(try await queue.record(ids[1]) == nil)
        let all = try await CarbScanBinary.run(["jobs", "dead", "retry", "--all"], environment: environment)
        #expect(all.stdout.contains("1 jobs queued"))
        #expect(try await queue.stats().first { $0.queue == "default" }?.dead == 0)
    }
}
