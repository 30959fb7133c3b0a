import Foundation
import JSON
import Postgres
import Queue
import Store
import TestSupport
import Testing
import Workers

/// Accepted work survives a Postgres outage: jobs wait for the database instead of spending their attempts on it
/// (199 device registrations accepted with 202 used to die at attempt 5 in a 30 s outage).
@Suite struct DatabaseOutageTests {
    @Test func jobsWaitOutAPostgresOutageAndFinishWhenItReturns() async throws {
        try await WorkerTestEnvironment.run { env in
            let real = try WorkerTestEnvironment.databaseConfiguration()
            let proxy = try await FaultProxy.start(to: real.host, port: real.port)
            defer { proxy.stop() }
            var configuration = real
            configuration.port = proxy.port
            configuration.searchPath = env.schema
            configuration.connectTimeout = .seconds(2)
            let database = PostgresClient(configuration: configuration, logger: WorkerTestEnvironment.logger)
            defer { database.shutdown() }
            var services = env.services(WorkerSettings())
            services.database = database
            let worker = Worker(
                queue: env.queue, registry: Handlers.registry(services: services),
                options: WorkerOptions(queues: [("default", 1)], concurrency: 4, gracePeriod: .seconds(2), blockTimeout: .seconds(1)),
                logger: WorkerTestEnvironment.logger)
            let task = Task { try await worker.run() }

            proxy.cut()
            let tokens = (0..<3).map { String(repeating: "c\($0)", count: 32) }
            var ids: [JobID] = []
            for token in tokens {
                let payload: JSONValue = ["action": "register", "token": .string(token), "platform": "ios"]
                ids.append(try #require(try await env.queue.enqueue("push-registration", payload: payload).id))
            }
            // Each job meets the outage twice (about 1 s, then 2 s apart) and keeps every one of its 5 attempts.
            #expect(try await eventually { try await Self.errors(env, ids).allSatisfy { $0 >= 2 } })
            for id in ids {
                let record = try #require(try await env.queue.record(id))
                #expect(record.status == .retrying && record.attempts == 0, "\(record)")
                #expect(record.error?.contains("dependency unavailable: postgres connection") == true, "\(record.error ?? "")")
            }

            proxy.restore()
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    try await ids.asyncAllSatisfy { try await env.queue.record($0)?.status == .succeeded }
                })
            for token in tokens { #expect(try await Devices(env.database).find(token: token) != nil) }
            worker.stop()
            try await task.value
        }
    }

    static func errors(_ env: WorkerTestEnvironment, _ ids: [JobID]) async throws -> [Int] {
        var counts: [Int] = []
        for id in ids { counts.append(try await env.queue.record(id)?.errors.count ?? 0) }
        return counts
    }
}

extension Array where Element: Sendable {
    func asyncAllSatisfy(_ predicate: (Element) async throws -> Bool) async rethrows -> Bool {
        for element in self where try await !predicate(element) { return false }
        return true
    }
}
