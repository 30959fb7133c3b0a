import Foundation
import TestSupport
import Testing

/// `carbscan work`'s limits: a queue's own (`queue_limit:` in its files, `--queues name=N`), their reload on SIGHUP, the
/// Postgres pool they need, and the open-file limit.
@Suite struct WorkLimitsTests {
    static let jobs = (try? CarbScanBinary.jobsDirectory().path) ?? "jobs"

    @Test(arguments: ["default=0", "default=ten", "default=", "nosuch=3"])
    func aBadQueueLimitIsRefused(queues: String) async throws {
        let result = try await CarbScanBinary.run(
            ["work", "--queues", queues], environment: ["CARBSCAN_JOBS_DIR": Self.jobs], timeout: .seconds(20))
        #expect(result.status == 64, "\(queues): \(result.stderr)")
        #expect(result.stderr.contains(queues.hasPrefix("nosuch") ? "unknown queue" : "queue limit"), "\(result.stderr)")
    }

    /// Started with a soft open-file limit of 400 under a higher hard one, the worker raises its soft limit to the
    /// hard one; held to 400 by both, it says that 2,000 jobs at once may need more.
    @Test(arguments: [("-Sn", false), ("-n", true)])
    func theOpenFileLimitIsRaisedOrItsShortfallSaid(ulimit: String, warns: Bool) async throws {
        let worker = try CarbScanBinary.start(
            ["work", "--queues", "default", "--concurrency", "2000"],
            environment: [
                "CARBSCAN_JOBS_DIR": Self.jobs, "CARBSCAN_PREFIX": "limits-\(UUID().uuidString.prefix(8))",
                "REDIS_URL": TestServices.redisURL,
            ], shell: "ulimit \(ulimit) 400")
        defer { worker.signal(SIGKILL) }
        #expect(try await eventually(timeout: .seconds(30)) { worker.output.contains("worker started") }, "\(worker.output)")
        let limits = try String(contentsOfFile: "/proc/\(worker.pid)/limits", encoding: .utf8)
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") } ?? ""
        let numbers = line.split(separator: " ").compactMap { Int($0) }
        #expect(numbers.count == 2 && numbers[0] == numbers[1], "soft limit not raised to the hard one: \(line)")
        #expect(worker.output.contains("the open-file limit is below") == warns, "\(worker.output)")
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(10)) == 0)
    }

    /// A copy of the repository's job files the test may edit.
    static func editableJobs() throws -> String {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("jobs-\(UUID().uuidString)").path
        try FileManager.default.copyItem(atPath: jobs, toPath: copy)
        return copy
    }

    /// SIGHUP: the worker reads its job files again and applies the queues' new limits (its `--queues` limits still
    /// win); files that no longer load change nothing, and the worker goes on.
    @Test func aSighupReloadsTheQueueLimits() async throws {
        let directory = try Self.editableJobs()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let worker = try CarbScanBinary.start(
            ["work", "--queues", "default,maintenance,mail=3"],
            environment: [
                "CARBSCAN_JOBS_DIR": directory, "CARBSCAN_PREFIX": "reload-\(UUID().uuidString.prefix(8))",
                "REDIS_URL": TestServices.redisURL,
            ])
        defer { worker.signal(SIGKILL) }
        #expect(try await eventually(timeout: .seconds(30)) { worker.output.contains("worker started") }, "\(worker.output)")
        let noop = directory + "/noop.yml"
        let original = try String(contentsOfFile: noop, encoding: .utf8)
        try original.replacingOccurrences(of: "queue: default\n", with: "queue: default\nqueue_limit: 7\n")
            .write(toFile: noop, atomically: true, encoding: .utf8)
        try (try String(contentsOfFile: directory + "/email.yml", encoding: .utf8) + "queue_limit: 9\n")
            .write(toFile: directory + "/email.yml", atomically: true, encoding: .utf8)
        worker.signal(SIGHUP)
        #expect(
            try await eventually(timeout: .seconds(10)) { worker.output.contains("default=7,mail=3,maintenance=4") }, "\(worker.output)")
        try "queue_limit: [".write(toFile: noop, atomically: true, encoding: .utf8)
        worker.signal(SIGHUP)
        #expect(try await eventually(timeout: .seconds(10)) { worker.output.contains("settings not reloaded") }, "\(worker.output)")
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(10)) == 0, "\(worker.output)")
    }

    /// The shipped files keep the jobs that hold a Postgres connection within the default pool; a pool of 2 is said to
    /// be too small for the maintenance queue's 4.
    @Test(arguments: [([String](), false), (["--database-pool", "2"], true)])
    func aPoolSmallerThanItsJobsIsSaid(options: [String], warns: Bool) async throws {
        let worker = try CarbScanBinary.start(
            ["work"] + options,
            environment: [
                "CARBSCAN_JOBS_DIR": Self.jobs, "CARBSCAN_PREFIX": "pool-\(UUID().uuidString.prefix(8))",
                "REDIS_URL": TestServices.redisURL,
            ])
        defer { worker.signal(SIGKILL) }
        #expect(try await eventually(timeout: .seconds(30)) { worker.output.contains("worker started") }, "\(worker.output)")
        #expect(worker.output.contains("more jobs that hold a Postgres connection") == warns, "\(worker.output)")
        #expect(!worker.output.contains("above --concurrency"), "\(worker.output)")
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(10)) == 0)
    }
}
