import Foundation
import Postgres
import Queue
import Redis
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Transactional enqueue, tried with real processes: `carbscan serve` is killed (SIGKILL) after the chat's
/// transaction committed (the count, the reservation and the outbox row) and before its job reached Redis (Redis is
/// frozen, so the enqueue hangs). No job is lost: a worker's upkeep leader relays the outbox row, the job runs once,
/// and the chat is counted and charged once.
@Suite(.serialized) struct TransactionalEnqueueTests {
    @Test func aServeKilledBetweenCommitAndEnqueueLosesNoJobAndChargesOnce() async throws {
        let model = try await OpenAIServer.start(
            fallback: .json(["response": "About 27 g.", "messageType": "carb_lookup", "followUpQuestions": ["And a small one?"]]))
        defer { model.stop() }
        try await withScratchDatabase { url in
            let redis = try PrivateRedis.start()
            defer {
                redis.resume()
                redis.stop()
            }
            let port = CarbScanBinary.freePort()
            let secret = String(repeating: "s", count: 40)
            let server = try CarbScanBinary.start(
                ["serve", "--port", String(port), "--migrate"],
                environment: ["DATABASE_URL": url, "REDIS_URL": redis.url, "JWT_SECRET": secret])
            defer { server.signal(SIGKILL) }
            let api = ServeClient(port: port)
            #expect(try await eventually(timeout: .seconds(30)) { (try? await api.call("GET", "health"))?.0 == 200 })
            let (_, session) = try await api.call(
                "POST", "auth/register", json: #"{"email":"outbox@example.com","password":"correct horse"}"#)
            let token = try #require(session["accessToken"] as? String)

            var configuration = try PostgresConfiguration(url: url)
            configuration.poolSize = 1
            let database = PostgresClient(configuration: configuration, logger: .init(label: "test"))
            defer { database.shutdown() }
            func count(_ sql: String) async throws -> Int { try await database.query(sql)[0].decode(0) }

            // Redis frozen: the request commits, then hangs in its enqueue; then the process dies.
            redis.pause()
            let request = Task { _ = try? await api.call("POST", "chat", token: token, json: #"{"message":"Carbs in a banana?"}"#) }
            #expect(try await eventually(timeout: .seconds(20)) { try await count("SELECT count(*) FROM job_outbox") == 1 })
            let jobText: String = try await database.query("SELECT job_id::text FROM job_outbox")[0].decode(0)
            let jobID = try #require(JobID(rawValue: jobText))
            try await Task.sleep(for: .milliseconds(300))
            server.signal(SIGKILL)
            _ = await server.waitForExit(timeout: .seconds(10))
            redis.resume()
            _ = await request.value
            #expect(try await count("SELECT count(*) FROM chat_reservations WHERE status = 'reserved'") == 1)
            #expect(try await count("SELECT COALESCE(sum(used), 0)::int FROM usage_counters WHERE kind = 'chat'") == 1)

            // A worker's upkeep leader relays the row (older than 5 s); the job runs once with the id the request chose.
            let worker = try CarbScanBinary.start(
                ["work", "--queues", "ai", "--concurrency", "4"],
                environment: ["DATABASE_URL": url, "REDIS_URL": redis.url, "AI_BASE_URL": model.baseURL, "AI_API_KEY": "sk-test"])
            defer { worker.signal(SIGKILL) }
            #expect(
                try await eventually(timeout: .seconds(40)) {
                    try await count("SELECT count(*) FROM chat_reservations WHERE status = 'charged'") == 1
                }, "\(worker.output.suffix(2000))")
            #expect(try await count("SELECT count(*) FROM job_outbox") == 0)
            #expect(try await count("SELECT count(*) FROM chat_messages") == 1)
            #expect(try await count("SELECT COALESCE(sum(used), 0)::int FROM usage_counters WHERE kind = 'chat'") == 1)
            #expect(model.received.count == 1)
            let client = try RedisClient(url: redis.url)
            defer { client.close() }
            let queue = JobQueue(redis: client, catalog: try JobCatalog.load(directory: try CarbScanBinary.jobsDirectory().path))
            #expect(try await queue.record(jobID)?.status == .succeeded)
            worker.signal(SIGTERM)
            _ = await worker.waitForExit(timeout: .seconds(10))
        }
    }
}
