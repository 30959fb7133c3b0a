import Foundation
import Testing

@testable import Queue

/// `queue_limit:` in the job files, how a worker's `--queues name=N` overrides it, and the warnings about settings a
/// worker cannot honour.
@Suite struct QueueLimitConfigTests {
    private func load(_ files: [String: String]) throws(ConfigError) -> JobCatalog {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jobs-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (name, text) in files {
            try? text.write(toFile: (directory as NSString).appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return try JobCatalog.load(directory: directory)
    }

    @Test func aFileSetsItsQueuesLimit() throws {
        let catalog = try load(["a.yml": "queue: ai\nqueue_limit: 500\n", "b.yml": "queue: ai\n", "c.yml": "queue: mail\n"])
        #expect(catalog["a"]?.queueLimit == 500)
        #expect(catalog.queueLimits == ["ai": 500])
        #expect(catalog.globalLimits.isEmpty)
    }

    @Test func aFileSetsItsQueuesGlobalLimit() throws {
        let catalog = try load(["a.yml": "queue: ai\nqueue_limit: 500\nglobal_limit: 50\n", "b.yml": "queue: ai\n"])
        #expect(catalog["a"]?.globalLimit == 50 && catalog["b"]?.globalLimit == nil)
        #expect(catalog.globalLimits == ["ai": 50] && catalog.queueLimits == ["ai": 500])
    }

    @Test(arguments: [
        ("queue_limit: 0", "must be from 1 to 100000, got 0"), ("queue_limit: many", "expected an integer"),
        ("global_limit: 0", "global_limit: must be from 1 to 100000, got 0"), ("global_limit: [1]", "expected an integer"),
    ])
    func aBadLimitIsRefusedWithItsLine(line: String, reason: String) throws {
        #expect {
            try JobKindSpec(yaml: "queue: ai\n\(line)\n", name: "a", file: "a.yml")
        } throws: { error in
            let error = error as? ConfigError
            return error?.line == 2 && error?.reason.contains(reason) == true
        }
    }

    @Test func kindsOfOneQueueMustAgree() throws {
        do {
            _ = try load(["a.yml": "queue: ai\nqueue_limit: 500\n", "b.yml": "queue: ai\nqueue_limit: 50\n"])
            Issue.record("two limits for one queue were accepted")
        } catch {
            #expect(error.file.hasSuffix("/b.yml"))
            #expect(error.reason.contains("queue_limit 50 for queue 'ai' disagrees with 500 in"), "\(error.reason)")
        }
        do {
            _ = try load(["a.yml": "queue: ai\nglobal_limit: 50\n", "b.yml": "queue: ai\nglobal_limit: 40\n"])
            Issue.record("two global limits for one queue were accepted")
        } catch {
            #expect(error.reason.contains("global_limit 40 for queue 'ai' disagrees with 50 in"), "\(error.reason)")
        }
        // Saying the same limit twice is fine.
        #expect(try load(["a.yml": "queue: ai\nqueue_limit: 5\n", "b.yml": "queue: ai\nqueue_limit: 5\n"]).queueLimits == ["ai": 5])
    }

    @Test func theCommandLineWinsAndOnlyServedQueuesCount() {
        let catalog = JobCatalog(kinds: [
            JobKindSpec(name: "a", queue: "ai", queueLimit: 500), JobKindSpec(name: "m", queue: "maintenance", queueLimit: 4),
            JobKindSpec(name: "n", queue: "default"),
        ])
        #expect(QueueLimits(served: ["ai", "maintenance", "default"], catalog: catalog).byQueue == ["ai": 500, "maintenance": 4])
        #expect(
            QueueLimits(served: ["ai", "default"], catalog: catalog, overrides: ["ai": 20, "default": 7]).byQueue == [
                "ai": 20, "default": 7,
            ])
    }

    @Test func aLimitAboveTheConcurrencyIsSaid() {
        let catalog = JobCatalog(kinds: [JobKindSpec(name: "a", queue: "ai", queueLimit: 500)])
        let limits = QueueLimits(served: ["ai"], catalog: catalog)
        let above = limits.warnings(served: ["ai"], concurrency: 100, databasePool: 16, catalog: catalog, databaseBoundKinds: [])
        #expect(
            above.map(\.description) == ["a queue's limit is above --concurrency, which bounds it (queue=ai, limit=500, concurrency=100)"])
        #expect(limits.warnings(served: ["ai"], concurrency: 500, databasePool: 16, catalog: catalog, databaseBoundKinds: []).isEmpty)
    }

    /// Kinds that keep a connection may run at once as many as their queues' limits (or the concurrency) allow; past the
    /// pool, the rest would wait for a connection.
    @Test func moreDatabaseBoundJobsThanThePoolIsSaid() {
        let catalog = JobCatalog(kinds: [
            JobKindSpec(name: "sweep", queue: "maintenance", queueLimit: 4), JobKindSpec(name: "batch", queue: "bulk"),
            JobKindSpec(name: "chat", queue: "ai"),
        ])
        func warnings(served: [String], pool: Int, overrides: [String: Int] = [:]) -> [String] {
            QueueLimits(served: served, catalog: catalog, overrides: overrides)
                .warnings(served: served, concurrency: 100, databasePool: pool, catalog: catalog, databaseBoundKinds: ["sweep", "batch"])
                .map(\.description)
        }
        #expect(warnings(served: ["maintenance", "ai"], pool: 16).isEmpty)
        #expect(warnings(served: ["maintenance", "ai"], pool: 3).count == 1)
        // An unlimited queue of a bound kind may take the whole concurrency.
        let unlimited = warnings(served: ["maintenance", "bulk"], pool: 16)
        #expect(unlimited.count == 1 && unlimited[0].hasSuffix("(queues=bulk,maintenance, at_once=100, database_pool=16)"), "\(unlimited)")
        #expect(warnings(served: ["maintenance", "bulk"], pool: 16, overrides: ["bulk": 12]).isEmpty)
        // Not served: no warning for it.
        #expect(warnings(served: ["ai"], pool: 1).isEmpty)
    }
}
