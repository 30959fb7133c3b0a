import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Outbox
import Queue
import TestSupport
import Testing

/// While Redis or Postgres is down the API answers 503 `SERVICE_UNAVAILABLE` with `Retry-After`, in the seed's
/// envelope and naming nothing internal (it answered 500 `SERVER_ERROR`), and recovers by itself.
// The bodies are `[String: Any]` for JSONSerialization; they are constants, never mutated (hence nonisolated(unsafe)).
@Suite struct OutageAnswersTests {
    nonisolated(unsafe) static let login: [String: Any] = [
        "provider": "email", "provider_uid": "u-1", "email": "a@example.com", "client_timestamp": "2026-11-24T12:00:00Z",
    ]
    nonisolated(unsafe) static let device: [String: Any] = ["deviceToken": String(repeating: "ab", count: 32), "platform": "ios"]

    static func expectUnavailable(_ response: CallResult, _ what: String) {
        #expect(response.status == 503, "\(what): \(response.status) \(response.text)")
        #expect(response.errorCode == "SERVICE_UNAVAILABLE", "\(what): \(response.text)")
        #expect(response.json["success"].bool == false)
        #expect(Int(response.headers[.retryAfter] ?? "") ?? 0 >= 1, "\(what): no Retry-After")
        let text = response.text.lowercased()
        #expect(!text.contains("redis") && !text.contains("postgres") && !text.contains("127.0.0.1"), "\(what): \(response.text)")
    }

    @Test func enqueueingRoutesAnswer503QuicklyWhileRedisIsDown() async throws {
        try await TestAPI.run(environment: ["LOGIN_MAX_ATTEMPTS_PER_IP": "1000"], faults: true) { api, client in
            let account = try await api.register(client)
            let redis = try #require(api.redisProxy)
            redis.cut()
            let started = ContinuousClock.now
            Self.expectUnavailable(try await client.call(.post, "logins", token: account.accessToken, json: Self.login), "POST logins")
            Self.expectUnavailable(try await client.call(.post, "devices/register", json: Self.device), "POST devices/register")
            Self.expectUnavailable(
                try await client.call(.post, "auth/login", json: ["email": account.email, "password": "correct horse"]), "POST auth/login")
            #expect(ContinuousClock.now - started < .seconds(6), "three refusals took \(ContinuousClock.now - started)")
            let health = try await client.call(.get, "health")
            #expect(health.status == 503 && health.json["error"]["details"]["redis"].string == "unavailable")

            redis.restore()
            #expect(
                try await eventually(timeout: .seconds(10)) {
                    try await client.call(.post, "logins", token: account.accessToken, json: Self.login).status == 202
                })
        }
    }

    /// An analysis sent while Redis is down is accepted whole: its photo, its scan and its job commit in one
    /// transaction (the outbox), the answer is 202 with the job, and the job reaches its queue once Redis is back
    /// (the relay), so the app has no reason to send it again. It used to answer 503 and undo the photo and scan.
    @Test func anAnalysisSentWhileRedisIsDownIsAcceptedWholeAndQueuedWhenItReturns() async throws {
        try await TestAPI.run(faults: true) { api, client in
            let account = try await api.register(client)
            let scans = try await api.database.query("SELECT remaining_scans FROM users WHERE id = $1", [account.id])[0]
                .decode("remaining_scans", as: Int.self)
            let redis = try #require(api.redisProxy)
            redis.cut()
            let response = try await client.call(
                .post, "analyze", token: account.accessToken, json: ["imageBase64": Data(AnalyzeRoutesTests.jpeg).base64EncodedString()])
            #expect(response.status == 202, "\(response.text)")
            let jobID = try #require(response.data["jobId"].string.flatMap(JobID.init(rawValue:)))
            #expect(response.data["status"].string == "queued")
            redis.restore()
            func count(_ sql: String) async throws -> Int { try await api.database.query(sql, [account.id])[0].decode(0) }
            #expect(try await count("SELECT count(*)::int FROM meal_photos WHERE user_id = $1") == 1)
            #expect(try await count("SELECT count(*)::int FROM scan_reservations WHERE user_id = $1 AND status = 'reserved'") == 1)
            #expect(try await count("SELECT remaining_scans FROM users WHERE id = $1") == scans - 1)
            #expect(try await count("SELECT count(*)::int FROM job_outbox WHERE owner = $1") == 1)
            // The owner reads it as queued meanwhile; the relay (the upkeep leader's, here called at once) enqueues it.
            // (Each client finds its cut connection gone once, and connects again.)
            #expect(
                try await eventually {
                    try await client.call(.get, "jobs/\(jobID.rawValue)", token: account.accessToken).data["status"].string == "queued"
                })
            #expect(try await eventually { (try? await JobOutbox(database: api.database, queue: api.queue).relay(olderThan: .zero)) == 1 })
            #expect(try await eventually { (try? await api.queue.record(jobID))?.owner == account.id })
            #expect(try await count("SELECT count(*)::int FROM job_outbox WHERE owner = $1") == 0)
        }
    }

    /// Redis going away while a request waits for its job: a long-poll ends at once with 503 (not at its timeout),
    /// and a chat or a device registration whose job was already accepted answers 202 with the job, not a 503 that
    /// would make the app send it again (a second job, a second chat counted).
    @Test func waitsForJobsEndCleanlyWhenRedisGoesAway() async throws {
        try await TestAPI.run(environment: ["SYNC_WAIT_SECONDS": "10"], faults: true) { api, client in
            let account = try await api.register(client)
            let redis = try #require(api.redisProxy)
            let accepted = try await client.call(
                .post, "chat", token: account.accessToken, json: ["message": "Carbs in rice?"], headers: [.init("Prefer")!: "respond-async"]
            )
            let jobID = try #require(accepted.data["jobId"].string)

            async let poll = client.call(.get, "jobs/\(jobID)?wait=10", token: account.accessToken)
            async let chat = client.call(.post, "chat", token: account.accessToken, json: ["message": "And pasta?"])
            async let device = client.call(.post, "devices/register", token: account.accessToken, json: Self.device)
            try await Task.sleep(for: .milliseconds(500))
            let cut = ContinuousClock.now
            redis.cut()
            let (polled, chatted, registered) = try await (poll, chat, device)
            #expect(ContinuousClock.now - cut < .seconds(6), "the waits took \(ContinuousClock.now - cut)")
            Self.expectUnavailable(polled, "GET jobs/{id}?wait")
            for answer in [chatted, registered] {
                #expect(answer.status == 202 && answer.data["jobId"].string != nil, "\(answer.text)")
                #expect(answer.headers[.location]?.contains("/jobs/") == true)
            }
            redis.restore()
        }
    }

    @Test func routesThatReadTheStoreAnswer503WhilePostgresIsDown() async throws {
        try await TestAPI.run(environment: ["SESSION_CACHE_SECONDS": "0"], faults: true) { api, client in
            let account = try await api.register(client)
            let postgres = try #require(api.postgresProxy)
            postgres.cut()
            Self.expectUnavailable(try await client.call(.get, "auth/me", token: account.accessToken), "GET auth/me")
            Self.expectUnavailable(try await client.call(.get, "meals", token: account.accessToken), "GET meals")
            Self.expectUnavailable(try await client.call(.get, "users/me", token: account.accessToken), "GET users/me")
            Self.expectUnavailable(
                try await client.call(.post, "auth/login", json: ["email": account.email, "password": "correct horse"]), "POST auth/login")

            postgres.restore()
            #expect(
                try await eventually(timeout: .seconds(10)) {
                    try await client.call(.get, "auth/me", token: account.accessToken).status == 200
                })
        }
    }
}

/// Redis allowed to evict keys loses queued jobs silently when memory fills: `health` says so (and the processes log
/// it at start-up), as BullMQ warns. Serialized with nothing else: it changes the shared Redis's policy for a moment.
@Suite(.serialized) struct EvictionPolicyTests {
    @Test func healthWarnsWhenRedisMayEvictKeys() async throws {
        try await TestAPI.run { api, client in
            #expect(try await client.call(.get, "health").data["warnings"].array.isEmpty)
            let before = try await api.queue.redis.send(["CONFIG", "GET", "maxmemory-policy"]).array?.last?.string ?? "noeviction"
            _ = try await api.queue.redis.send(["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"])
            let health = try await client.call(.get, "health")
            _ = try await api.queue.redis.send(["CONFIG", "SET", "maxmemory-policy", before])
            #expect(health.status == 200)
            #expect(health.data["warnings"][0].string?.contains("allkeys-lru") == true, "\(health.text)")
        }
    }
}
