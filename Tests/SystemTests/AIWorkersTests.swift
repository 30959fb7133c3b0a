import Foundation
import Postgres
import Queue
import Redis
import TestSupport
import Testing

/// The AI provider's rate limit across real worker processes: two `carbscan work` processes on one Redis, with a
/// local OpenAI-compatible model. jobs/chat.yml draws from the `ai` bucket (10/s, burst 20): 45 chats need at
/// least (45 − 20) / 10 = 2.5 s however many workers run them.
@Suite(.serialized) struct AIWorkersTests {
    @Test func theAIRateLimitHoldsAcrossTwoWorkerProcesses() async throws {
        let model = try await OpenAIServer.start(
            fallback: .json([
                "response": "About 27 g.", "messageType": "carb_lookup", "followUpQuestions": ["And a small one?"],
            ]))
        defer { model.stop() }
        try await withScratchDatabase { url in
            let migrate = try await CarbScanBinary.run(["migrate"], environment: ["DATABASE_URL": url])
            #expect(migrate.status == 0, "\(migrate.stderr)")
            var configuration = try PostgresConfiguration(url: url)
            configuration.poolSize = 1
            let database = PostgresClient(configuration: configuration, logger: .init(label: "test"))
            defer { database.shutdown() }
            let user = UUID().uuidString.lowercased()
            try await database.execute(
                "INSERT INTO users (id, remaining_scans, scan_reset_date) VALUES ($1, 3, now() + interval '1 day')", [user])

            let redis = try RedisClient(url: TestServices.redisURL)
            let prefix = "ai-workers-\(UUID().uuidString.prefix(8))"
            let jobs = try CarbScanBinary.jobsDirectory()
            let queue = JobQueue(redis: redis, catalog: try JobCatalog.load(directory: jobs.path), options: QueueOptions(prefix: prefix))
            let environment = [
                "REDIS_URL": TestServices.redisURL, "DATABASE_URL": url, "CARBSCAN_PREFIX": prefix, "CARBSCAN_JOBS_DIR": jobs.path,
                "AI_BASE_URL": model.baseURL, "AI_API_KEY": "sk-test",
            ]
            var workers: [RunningProcess] = []
            defer {
                for worker in workers { worker.signal(SIGKILL) }
                Task { await removeKeys(prefix: prefix, redis: redis) }
            }
            for _ in 0..<2 {
                workers.append(try CarbScanBinary.start(["work", "--queues", "ai", "--concurrency", "10"], environment: environment))
            }
            // Both consumers joined the group before the jobs arrive (neither can hold more than 10 at once).
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    let group = try? await redis.send(["XINFO", "CONSUMERS", queue.keys("ai").stream, QueueKeys.group])
                    return (group?.array?.count ?? 0) == 2
                })
            let ids = try await queue.enqueue(
                (0..<45).map { index in
                    (
                        kind: "chat",
                        payload: [
                            "userId": .string(user), "messageId": .string(UUID().uuidString.lowercased()),
                            "message": .string("Question \(index)"),
                        ], options: EnqueueOptions()
                    )
                }
            ).compactMap(\.id)
            #expect(ids.count == 45)
            #expect(
                try await eventually(timeout: .seconds(60)) {
                    try await queue.stats().first { $0.queue == "ai" }?.succeededTotal == 45
                })
            for worker in workers { worker.signal(SIGTERM) }
            for worker in workers { _ = await worker.waitForExit(timeout: .seconds(10)) }

            // Both processes took part, and together they kept to the bucket.
            // The bucket holds 20 and adds 10 a second, so the 45th token is granted 2.5 s after the first, at the
            // earliest. Measured on Redis's clock (enqueue and finish times), from the enqueue to the last finish: the
            // model's own receive times, taken in this test process, bunched up when the process was starved under a
            // loaded run (45 in 0.64 s).
            var consumers = Set<String>()
            var enqueued: [Date] = []
            var finished: [Date] = []
            for id in ids {
                let record = try #require(try await queue.record(id))
                if let worker = record.worker { consumers.insert(worker) }
                enqueued.append(record.enqueuedAt)
                if let end = record.finishedAt { finished.append(end) }
            }
            #expect(consumers.count == 2, "\(consumers)")
            #expect(model.received.count == 45)
            let span = try #require(finished.max()).timeIntervalSince(try #require(enqueued.min()))
            #expect(finished.count == 45 && span >= 2.4, "45 chats finished \(span) s after their enqueue")
            let stored = try await database.query("SELECT count(*) FROM chat_messages WHERE user_id = $1", [user])
            #expect(try stored[0].decode(0, as: Int.self) == 45)
        }
    }
}
