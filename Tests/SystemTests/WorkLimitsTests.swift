import Foundation
import TestSupport
import Testing

/// `carbscan work`'s limits: a queue's own (`--queues name=N`) and the open-file limit it needs.
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
}
