import Foundation
import TestSupport
import Testing

/// `carbscan work` says once at start-up whether pushes go to APNs (never showing the key), and refuses a partial
/// APNs configuration.
@Suite struct PushStartupTests {
    static let jobs = (try? CarbScanBinary.jobsDirectory().path) ?? "jobs"

    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = [
            "CARBSCAN_JOBS_DIR": Self.jobs, "CARBSCAN_PREFIX": "push-\(UUID().uuidString.prefix(8))", "REDIS_URL": TestServices.redisURL,
        ]
        for (name, value) in extra { environment[name] = value }
        return environment
    }

    @Test func withoutAPNsTheWorkerSaysOncePushesAreOff() async throws {
        let worker = try CarbScanBinary.start(["work", "--queues", "push"], environment: Self.environment())
        defer { worker.signal(SIGKILL) }
        #expect(try await eventually(timeout: .seconds(30)) { worker.output.contains("worker started") }, "\(worker.output)")
        #expect(worker.output.components(separatedBy: "pushes are off for iOS").count == 2, "\(worker.output)")
        #expect(worker.output.components(separatedBy: "pushes are off for Android").count == 2, "\(worker.output)")
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(10)) == 0)
    }

    @Test func withAPNsTheWorkerSaysWhereTheyGoAndNeverTheKey() async throws {
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey-\(UUID().uuidString).p8").path
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await APNsPeer.makeKey(at: key)
        let worker = try CarbScanBinary.start(
            ["work", "--queues", "push"],
            environment: Self.environment([
                "APNS_KEY_PATH": key, "APNS_KEY_ID": "KEY1234567", "APNS_TEAM_ID": "TEAM123456", "APNS_TOPIC": "com.carbscan.test",
                "APNS_URL": "https://api.sandbox.push.apple.com",
            ]))
        defer { worker.signal(SIGKILL) }
        #expect(try await eventually(timeout: .seconds(30)) { worker.output.contains("worker started") }, "\(worker.output)")
        #expect(worker.output.contains("pushes go to APNs") && worker.output.contains("api.sandbox.push.apple.com"), "\(worker.output)")
        #expect(!worker.output.contains("pushes are off for iOS"))
        let secret = try String(contentsOfFile: key, encoding: .utf8).split(separator: "\n")[1]
        #expect(!worker.output.contains(secret))
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(10)) == 0)
    }
}
