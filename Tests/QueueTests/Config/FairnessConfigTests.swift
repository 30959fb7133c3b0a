import Foundation
import JSON
import Testing

@testable import Queue

/// `fair:` in the job files: the payload member naming a job's lane and the window, with its default from the kind's
/// rate limit.
@Suite struct FairnessConfigTests {
    static let payload = "payload: { type: object, additionalProperties: false, properties: { userId: { type: string } } }\n"

    @Test func theWindowDefaultsToASecondOfTheBudget() throws {
        let limited = try JobKindSpec(
            yaml: "rate_limit: { name: ai, per_second: 9.5 }\nfair: { by: userId }\n" + Self.payload, name: "a", file: "a.yml")
        #expect(limited.fairness == Fairness(by: "userId", window: 10))
        let unlimited = try JobKindSpec(yaml: "fair: { by: userId }\n" + Self.payload, name: "a", file: "a.yml")
        #expect(unlimited.fairness?.window == Fairness.defaultWindow)
        let given = try JobKindSpec(yaml: "fair: { by: userId, window: 3 }\n" + Self.payload, name: "a", file: "a.yml")
        #expect(given.fairness?.window == 3)
    }

    @Test(arguments: [
        ("fair: { window: 3 }", "missing 'by'"), ("fair: { by: email }", "'email' is not a property of the payload schema"),
        ("fair: { by: userId, window: 0 }", "must be from 1 to 1000000, got 0"), ("fair: { by: userId, size: 3 }", "size"),
    ])
    func aBadSettingIsRefusedWithItsLine(line: String, reason: String) throws {
        let error = loadError(line + "\n" + Self.payload)
        #expect(error?.line == 1 && error?.reason.contains(reason) == true, "\(String(describing: error))")
    }

    @Test func kindsOfOneQueueMustAgreeOnTheWindow() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jobs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (name, window) in [("a", 5), ("b", 7)] {
            try "queue: ai\nfair: { by: userId, window: \(window) }\n\(Self.payload)"
                .write(toFile: "\(directory)/\(name).yml", atomically: true, encoding: .utf8)
        }
        #expect {
            try JobCatalog.load(directory: directory)
        } throws: { error in
            (error as? ConfigError)?.reason.contains("fair.window 7 for queue 'ai' disagrees with 5 in") == true
        }
    }

    /// A job's lane is its member as text; a job without it shares the lane `-`.
    @Test func aJobsLaneIsItsMember() {
        let fairness = Fairness(by: "userId", window: 1)
        #expect(fairness.lane(of: ["userId": "u-1"]) == "u-1")
        #expect(fairness.lane(of: ["userId": 42]) == "42")
        #expect(fairness.lane(of: ["userId": 42.0]) == "42" && fairness.lane(of: ["userId": 1.5]) == "1.5")
        #expect(fairness.lane(of: [:]) == Fairness.keylessLane)
        #expect(fairness.lane(of: ["userId": ""]) == Fairness.keylessLane)
    }

    /// A class's weight (`weight_by`, `weights`): read with the lane, 1 for a class not listed or a job without one.
    @Test func aLanesWeightIsItsJobsClasss() throws {
        let payload =
            "payload: { type: object, additionalProperties: false, properties: { userId: { type: string }, tier: { type: string } } }\n"
        let spec = try JobKindSpec(
            yaml: "fair: { by: userId, weight_by: tier, weights: { pro: 3, team: 5 } }\n" + payload, name: "a", file: "a.yml")
        let fairness = try #require(spec.fairness)
        #expect(fairness.weightBy == "tier" && fairness.weights == ["pro": 3, "team": 5])
        #expect(fairness.weight(of: ["userId": "u", "tier": "pro"]) == 3)
        #expect(fairness.weight(of: ["userId": "u", "tier": "free"]) == 1 && fairness.weight(of: ["userId": "u"]) == 1)
        #expect(Fairness(by: "userId", window: 1).weight(of: ["tier": "pro"]) == 1)
    }

    @Test(arguments: [
        ("fair: { by: userId, weights: { pro: 3 } }", "needs 'weight_by'"), ("fair: { by: userId, weight_by: tier }", "needs 'weights'"),
        ("fair: { by: userId, weight_by: plan, weights: { pro: 3 } }", "'plan' is not a property"),
        ("fair: { by: userId, weight_by: tier, weights: { pro: 0 } }", "must be from 1 to 100, got 0"),
        ("fair: { by: userId, weight_by: tier, weights: { pro: many } }", "fair.weights.pro"),
        ("fair: { by: userId, weight_by: tier, weights: [pro] }", "expected a mapping of classes to weights"),
    ])
    func aBadWeightIsRefusedWithItsLine(line: String, reason: String) throws {
        let payload =
            "payload: { type: object, additionalProperties: false, properties: { userId: { type: string }, tier: { type: string } } }\n"
        let error = loadError(line + "\n" + payload)
        #expect(error?.line == 1 && error?.reason.contains(reason) == true, "\(String(describing: error))")
    }
}
