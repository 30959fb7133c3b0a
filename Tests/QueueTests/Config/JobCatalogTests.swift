import Foundation
import JSON
import Testing

@testable import Queue

@Suite struct JobCatalogTests {
    private func temporaryDirectory(_ files: [String: String]) throws -> String {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("jobs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (name, text) in files {
            try text.write(toFile: (directory as NSString).appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return directory
    }

    @Test func loadsYmlAndYamlFilesOnly() throws {
        let directory = try temporaryDirectory([
            "alpha.yml": "queue: q2\npayload: { type: object, required: [id], properties: { id: { type: integer } } }\n",
            "beta.yaml": "queue: q1\n",
            "gamma.yml": "{}\n",
            "README.md": "not a kind",
            ".hidden.yml": "garbage: [",
        ])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let catalog = try JobCatalog.load(directory: directory)
        #expect(catalog.kinds.keys.sorted() == ["alpha", "beta", "gamma"])
        #expect(catalog.queues == ["default", "q1", "q2"])
        #expect(catalog["beta"]?.queue == "q1")
        #expect(catalog["beta"]?.file == directory + "/beta.yaml")
        #expect(catalog["delta"] == nil)
        #expect(catalog.validatePayload(kind: "alpha", payload: ["id": 3]).isEmpty)
        #expect(catalog.validatePayload(kind: "alpha", payload: [:]) == [SchemaViolation(path: "/id", message: "is required")])
        #expect(catalog.validatePayload(kind: "delta", payload: [:]).map(\.message) == ["unknown job kind 'delta'"])
    }

    @Test func theFirstInvalidFileStopsTheLoad() throws {
        let directory = try temporaryDirectory([
            "a-good.yml": "queue: fine\n",
            "b-bad.yml": "queue: fine\npriority: 500\n",
            "c-bad.yml": "timeout: x\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            _ = try JobCatalog.load(directory: directory)
            Issue.record("loaded an invalid catalog")
        } catch {
            #expect(error.file == directory + "/b-bad.yml")
            #expect(error.line == 2)
            #expect(error.reason.contains("priority: must be from 1 to 100"))
        }
    }

    @Test func sameKindTwiceAndMissingDirectory() throws {
        let directory = try temporaryDirectory(["twin.yml": "{}", "twin.yaml": "{}"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(throws: ConfigError.self) { try JobCatalog.load(directory: directory) }
        do {
            _ = try JobCatalog.load(directory: directory + "/missing")
            Issue.record("loaded a missing directory")
        } catch {
            #expect(error.reason.contains("cannot read the job kinds directory"))
        }
    }

    @Test func initKeepsTheLastOfTwoSameNames() {
        let catalog = JobCatalog(kinds: [JobKindSpec(name: "a", queue: "one"), JobKindSpec(name: "a", queue: "two")])
        #expect(catalog["a"]?.queue == "two")
        #expect(catalog.queues == ["two"])
    }

    // MARK: The repository's own jobs/ folder

    @Test func theRepositoryJobsLoad() throws {
        let catalog = try JobCatalog.load(directory: repositoryJobsDirectory())
        // Every file is a kind (the folder is the list: nothing here names them all).
        let files = try FileManager.default.contentsOfDirectory(atPath: repositoryJobsDirectory()).filter { $0.hasSuffix(".yml") }
        #expect(catalog.kinds.keys.sorted() == files.map { String($0.dropLast(4)) }.sorted())
        #expect(Set(catalog.queues).isSuperset(of: ["ai", "billing", "default", "mail", "maintenance", "webhooks"]))

        let analysis = try #require(catalog["analysis"])
        #expect(analysis.queue == "ai" && analysis.maxAttempts == 4 && analysis.visibilityTimeout == .seconds(90))
        let user = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
        let photo = "4711"  // meal_photos.id: the photo stays in Postgres
        #expect(
            catalog.validatePayload(kind: "analysis", payload: ["userId": .string(user), "photoId": "9b2e1c44-5d6f"]).map(\.path) == [
                "/photoId"
            ])
        #expect(analysis.uniqueness?.key(for: ["userId": .string(user), "photoId": .string(photo)]) == "analysis:\(photo)")
        #expect(catalog.validatePayload(kind: "analysis", payload: ["userId": .string(user), "photoId": .string(photo)]).isEmpty)
        // Seed 001's POST analyze takes no meal type, so neither does the job (the route, the document and the kind agree).
        #expect(
            catalog.validatePayload(kind: "analysis", payload: ["userId": .string(user), "photoId": .string(photo), "mealType": "lunch"])
                .map(\.path) == ["/mealType"])
        #expect(
            catalog.validatePayload(kind: "analysis", payload: ["userId": .string(user), "imageBase64": "…"]).map(\.path) == [
                "/photoId", "/imageBase64",
            ])

        let chat = try #require(catalog["chat"])
        let longMessage = JSONValue.string(String(repeating: "a", count: 2_001))
        #expect(
            chat.payloadSchema.validate(["userId": .string(user), "messageId": .string(user), "message": longMessage]).map(\.path) == [
                "/message"
            ])

        let reset = try #require(catalog["scan-reset"])
        #expect(reset.queue == "maintenance")
        #expect(reset.schedules.map(\.name) == ["daily", "monthly"])
        #expect(reset.schedules.map(\.payload) == [["scope": "daily"], ["scope": "monthly"]])
        let now = try instant("2026-11-21T15:00:00Z")
        #expect(iso(reset.schedules.first?.nextFire(after: now)) == "2026-11-22T00:00:00Z")
        #expect(iso(reset.schedules.last?.nextFire(after: now)) == "2026-12-01T00:00:00Z")
        #expect(iso(reset.schedules.last?.previousFire(atOrBefore: now)) == "2026-11-01T00:00:00Z")

        let sync = try #require(catalog["subscription-sync"])
        #expect(sync.queue == "billing")
        #expect(sync.schedules.first?.name == "reconciliation")
        #expect(sync.schedules.first?.payload == ["source": "reconciliation"])
        #expect(iso(sync.schedules.first?.nextFire(after: now)) == "2026-11-22T03:30:00Z")

        let push = try #require(catalog["push-registration"])
        // No enqueue lock: a held key would answer a register after an unregister with the earlier, finished job.
        #expect(push.uniqueness == nil)
        #expect(
            catalog.validatePayload(kind: "push-registration", payload: ["action": "register", "token": "abc", "platform": "windows"]).map(
                \.path) == ["/platform"])

        let login = try #require(catalog["login-webhook"])
        #expect(login.queue == "webhooks" && login.maxAttempts == 8)
        // No enqueue lock: every event id is new, and the endpoint already ignores one it has (jobs/login-webhook.yml).
        #expect(login.uniqueness == nil)
        // Seed 002's example body, plus the event and its id.
        let seedBody: JSONValue = [
            "event": "signin", "eventId": .string(user), "provider": "apple", "provider_uid": "001234.abc",
            "email": "user@example.com", "display_name": "Jane Doe", "client_timestamp": "2025-02-04T18:30:00Z",
        ]
        #expect(login.payloadSchema.validate(seedBody).isEmpty)
        var anonymous = seedBody
        if case .object(var members) = anonymous {
            members["email"] = .null
            members["display_name"] = .null
            anonymous = .object(members)
        }
        #expect(login.payloadSchema.validate(anonymous).isEmpty)

        let noop = try #require(catalog["noop"])
        #expect(noop.retention == Retention(succeeded: .seconds(3_600), failed: .seconds(604_800)))
        #expect(noop.maxAttempts == 3)
        #expect(noop.backoff == .exponential(base: .seconds(1), max: .seconds(60), jitter: 0.2))
        #expect(
            noop.payloadSchema.validate(["sleepMs": 10, "record": "bench:1", "stamp": 1.7e9, "fail": "retry", "result": ["x": [1]]]).isEmpty
        )
        #expect(
            noop.payloadSchema.validate(["sleepMs": 600_001, "fail": "sometimes", "typo": 1]).map(\.path) == ["/fail", "/sleepMs", "/typo"])
    }
}
