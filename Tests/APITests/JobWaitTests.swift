import Foundation
import JSON
import Queue
import TestSupport
import Testing
import Workers

@Suite struct JobWaitTests {
    func enqueueNoop(_ api: TestAPI, owner: String, payload: JSONValue) async throws -> JobID {
        try #require(try await api.queue.enqueue("noop", payload: payload, options: EnqueueOptions(owner: owner)).id)
    }

    @Test(arguments: TestServices.redisURLs) func waitReturnsTheFinishedJob(redisURL: String) async throws {
        try await TestAPI.run(redisURL: redisURL) { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "default")
            defer { worker.stop() }
            let id = try await enqueueNoop(api, owner: account.id, payload: ["sleepMs": 300, "result": ["carbs": 42]])
            // The longest wait: a 300 ms job once stayed `running` past a 10 s wait in a loaded clean-clone run, where the
            // whole suite ran 108 s.
            let waited = try await client.call(.get, "jobs/\(id.rawValue)?wait=30", token: account.accessToken)
            #expect(waited.status == 200)
            #expect(waited.data["status"].string == "succeeded")
            #expect(waited.data["result"]["carbs"].int == 42)
            #expect(waited.data["finishedAt"].string != nil)
            worker.stop()
            try await task.value
        }
    }

    @Test func waitEndsWithTheCurrentStatusWhenTimeRunsOut() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let id = try await enqueueNoop(api, owner: account.id, payload: [:])
            let clock = ContinuousClock()
            let start = clock.now
            let waited = try await client.call(.get, "jobs/\(id.rawValue)?wait=1", token: account.accessToken)
            #expect(clock.now - start >= .milliseconds(900))
            #expect(waited.status == 200)
            #expect(waited.data["status"].string == "queued")
            for bad in ["31", "-1", "soon"] {
                let refused = try await client.call(.get, "jobs/\(id.rawValue)?wait=\(bad)", token: account.accessToken)
                #expect(refused.status == 400)
                #expect(refused.json["error"]["details"]["field"].string == "wait")
            }
        }
    }

    /// Many waiting requests share the process's one subscription; none opens a Redis connection of its own.
    @Test(arguments: TestServices.redisURLs) func waitersShareOneSubscription(redisURL: String) async throws {
        try await TestAPI.run(redisURL: redisURL) { api, client in
            let account = try await api.register(client)
            let ids = try await (0..<6).asyncMap { _ in try await enqueueNoop(api, owner: account.id, payload: ["sleepMs": 50]) }
            let channel = api.queue.keys("default").events
            async let answers = withThrowingTaskGroup(of: String?.self) { group in
                for id in ids {
                    group.addTask {
                        try await client.call(.get, "jobs/\(id.rawValue)?wait=15", token: account.accessToken).data["status"].string
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Wait until all six requests are parked, then count the channel's subscribers.
            var parked = false
            for _ in 0..<200 where !parked {
                try await Task.sleep(for: .milliseconds(20))
                parked = api.dependencies.waiter.waitingCount == ids.count
            }
            #expect(parked)
            let subscribers = try await api.queue.redis.send(["PUBSUB", "SHARDNUMSUB", channel])
            #expect(subscribers.array?[1].int == 1)
            let (worker, task) = api.startWorker(queue: "default")
            #expect(try await answers == Array(repeating: "succeeded", count: 6))
            worker.stop()
            try await task.value
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
