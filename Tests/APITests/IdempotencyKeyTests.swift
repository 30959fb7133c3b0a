import Foundation
import HTTPTypes
import JSON
import OutboundHTTP
import Queue
import TestSupport
import Testing
import Workers

/// `Idempotency-Key` on the POSTs that charge or store: a retry never charges twice.
@Suite struct IdempotencyKeyTests {
    static let key = HTTPField.Name("Idempotency-Key")!
    static let photo = ["imageBase64": Data(AnalyzeRoutesTests.jpeg).base64EncodedString()]
    static let answer: JSONValue = [
        "response": "A banana has about 27 g of carbohydrates.", "messageType": "carb_lookup", "followUpQuestions": ["And an apple?"],
    ]

    static func remaining(_ api: TestAPI, _ userID: String) async throws -> Int {
        try await api.database.query("SELECT remaining_scans FROM users WHERE id = $1", [userID])[0].decode(0)
    }

    static func count(_ api: TestAPI, _ sql: String, _ userID: String) async throws -> Int {
        try await api.database.query(sql, [userID])[0].decode(0)
    }

    @Test func aRetriedAnalysisAnswersTheSameMealAndChargesOnce() async throws {
        let model = try await OpenAIServer.start(fallback: .json(AnalyzeRoutesTests.estimate))
        defer { model.stop() }
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let settings = WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test")
            let (worker, task) = api.startWorker(queue: "ai", settings: settings)
            defer { worker.stop() }
            let headers: HTTPFields = [Self.key: "\"8e03978e-40d5-43e8-bc93-6894a57f9324\""]
            let first = try await client.call(.post, "analyze", token: account.accessToken, json: Self.photo, headers: headers)
            #expect(first.status == 200, "\(first.text)")
            let mealID = try #require(first.data["mealId"].int)
            #expect(first.data["scanUsage"]["remainingScans"].int == 2)
            // The answer was lost; the app sends the same photo with the same key (bare, this time).
            let retry = try await client.call(
                .post, "analyze", token: account.accessToken, json: Self.photo,
                headers: [Self.key: "8e03978e-40d5-43e8-bc93-6894a57f9324"])
            #expect(retry.status == 200, "\(retry.text)")
            #expect(retry.data["mealId"].int == mealID)
            #expect(retry.data["scanUsage"]["remainingScans"].int == 2)
            #expect(try await Self.remaining(api, account.id) == 2)
            #expect(try await Self.count(api, "SELECT count(*) FROM meals WHERE user_id = $1", account.id) == 1)
            #expect(try await Self.count(api, "SELECT count(*) FROM meal_photos WHERE user_id = $1", account.id) == 1)
            #expect(model.received.count == 1)

            // The same photo as multipart, another boundary: the same request, the same meal.
            let boundary = "retry-\(UUID().uuidString.prefix(6))"
            var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"image\"; filename=\"meal.jpg\"\r\n\r\n".utf8)
            body += Data(AnalyzeRoutesTests.jpeg) + Data("\r\n--\(boundary)--\r\n".utf8)
            var multipart = headers
            multipart[.contentType] = "multipart/form-data; boundary=\(boundary)"
            let asMultipart = try await client.call(.post, "analyze", token: account.accessToken, bytes: Array(body), headers: multipart)
            #expect(asMultipart.data["mealId"].int == mealID, "\(asMultipart.text)")

            // The key with another photo is refused, and charges nothing.
            let other = ["imageBase64": Data(AnalyzeRoutesTests.png).base64EncodedString()]
            let reused = try await client.call(.post, "analyze", token: account.accessToken, json: other, headers: headers)
            #expect(reused.status == 422 && reused.errorCode == "IDEMPOTENCY_KEY_REUSED", "\(reused.text)")
            #expect(try await Self.remaining(api, account.id) == 2)
            // Keys are per user: another user's same key is theirs alone.
            let stranger = try await api.register(client)
            let theirs = try await client.call(.post, "analyze", token: stranger.accessToken, json: Self.photo, headers: headers)
            #expect(theirs.status == 200 && theirs.data["mealId"].int != mealID)
            // Without a key, the same photo again is a new analysis (the control).
            let unkeyed = try await client.call(.post, "analyze", token: account.accessToken, json: Self.photo)
            #expect(unkeyed.status == 200 && unkeyed.data["mealId"].int != mealID)
            #expect(try await Self.remaining(api, account.id) == 1)

            // A worker that runs the job twice (a re-delivery): still one meal, one scan.
            let jobID = try #require(
                try await api.database.query("SELECT job_id FROM idempotency_keys WHERE user_id = $1", [account.id])[0].decode(
                    0, as: String.self))
            let photoID: Int64 = try await api.database.query("SELECT photo_id FROM meals WHERE id = $1", [mealID])[0].decode(0)
            let http = HTTPClient(logger: TestAPI.logger)
            defer { http.shutdown() }
            let services = WorkerServices(
                redis: api.queue.redis, prefix: api.queue.options.prefix, catalog: api.queue.catalog, database: api.database,
                http: http, settings: settings, logger: TestAPI.logger)
            let handler = try #require(Handlers.registry(services: services).handler(for: "analysis"))
            _ = try await handler(
                #"{"userId":"\#(account.id)","photoId":"\#(photoID)"}"#,
                JobContext(id: try #require(JobID(rawValue: jobID)), kind: "analysis", attempt: 2, maxAttempts: 4))
            #expect(try await Self.count(api, "SELECT count(*) FROM meals WHERE user_id = $1", account.id) == 2)
            #expect(try await Self.remaining(api, account.id) == 1)
            worker.stop()
            try await task.value
        }
    }

    @Test func aRetriedChatFollowsTheFirstJobFrom202To200AndCountsOnce() async throws {
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        try await TestAPI.run(environment: ["SYNC_WAIT_SECONDS": "0"]) { api, client in
            let account = try await api.register(client)
            let headers: HTTPFields = [Self.key: "chat-\(UUID().uuidString)"]
            let message = ["message": "Carbs in a banana?"]
            let first = try await client.call(.post, "chat", token: account.accessToken, json: message, headers: headers)
            #expect(first.status == 202, "\(first.text)")
            let jobID = try #require(first.data["jobId"].string)
            // Nobody has run it yet: the retry is the same job, as it stands.
            let retry = try await client.call(.post, "chat", token: account.accessToken, json: message, headers: headers)
            #expect(retry.status == 202 && retry.data["jobId"].string == jobID, "\(retry.text)")
            #expect(retry.headers[.location] == "/api/mobile/v1/jobs/\(jobID)")
            let counted = "SELECT COALESCE(sum(used), 0)::int FROM usage_counters WHERE user_id = $1 AND kind = 'chat'"
            #expect(try await Self.count(api, counted, account.id) == 1)
            // Once it ran, the retry answers seed 001's body.
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            defer { worker.stop() }
            #expect(
                try await eventually(timeout: .seconds(15)) {
                    try await api.queue.record(JobID(rawValue: jobID)!)?.status == .succeeded
                })
            let done = try await client.call(.post, "chat", token: account.accessToken, json: message, headers: headers)
            #expect(done.status == 200, "\(done.text)")
            #expect(done.data["response"].string == "A banana has about 27 g of carbohydrates.")
            #expect(done.data["usage"]["totalUsedToday"].int == 1)
            #expect(try await Self.count(api, counted, account.id) == 1)
            #expect(try await Self.count(api, "SELECT count(*) FROM chat_messages WHERE user_id = $1", account.id) == 1)
            #expect(model.received.count == 1)
            worker.stop()
            try await task.value
        }
    }

    @Test func retriesRacingTheFirstRequestChargeOnce() async throws {
        try await TestAPI.run(environment: ["SYNC_WAIT_SECONDS": "0"]) { api, client in
            let account = try await api.register(client)
            try await api.setTier(.pro, userID: account.id)
            try await api.database.execute("UPDATE users SET remaining_scans = 300 WHERE id = $1", [account.id])
            for round in 0..<5 {
                let headers: HTTPFields = [Self.key: "race-\(round)"]
                async let a = client.call(.post, "analyze", token: account.accessToken, json: Self.photo, headers: headers)
                async let b = client.call(.post, "analyze", token: account.accessToken, json: Self.photo, headers: headers)
                async let c = client.call(.post, "analyze", token: account.accessToken, json: Self.photo, headers: headers)
                let answers = try await [a, b, c]
                // Each is the one job (202) or told the first is still being answered (409), never a second charge.
                let jobs = Set(answers.filter { $0.status == 202 }.compactMap { $0.data["jobId"].string })
                #expect(jobs.count == 1, "\(answers.map(\.text))")
                for refused in answers where refused.status != 202 {
                    #expect(refused.status == 409 && refused.errorCode == "IDEMPOTENCY_KEY_IN_USE", "\(refused.text)")
                    #expect(refused.headers[.retryAfter] == "1")
                }
            }
            #expect(try await Self.count(api, "SELECT count(*) FROM meal_photos WHERE user_id = $1", account.id) == 5)
            #expect(try await Self.remaining(api, account.id) == 300 - 5)
        }
    }

    @Test func aSyncRetryReplaysTheStoredAnswerAndAnAbandonedKeyIsTakenOver() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let headers: HTTPFields = [Self.key: "sync-1"]
            let body: [String: Any] = [
                "localMeals": [["localId": "l-1", "name": "Toast", "carbEstimate": 24, "createdAt": "2026-11-20T08:00:00.000Z"]]
            ]
            let first = try await client.call(.post, "meals/sync", token: account.accessToken, json: body, headers: headers)
            #expect(first.status == 200, "\(first.text)")
            let replay = try await client.call(.post, "meals/sync", token: account.accessToken, json: body, headers: headers)
            #expect(replay.status == 200 && replay.text == first.text)
            #expect(replay.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            #expect(first.headers[HTTPField.Name("Idempotent-Replayed")!] == nil)

            // A first request still being answered (its process may have died) holds the key: 409 with Retry-After…
            try await api.database.execute(
                "UPDATE idempotency_keys SET status = NULL, body = NULL WHERE user_id = $1 AND key = 'sync-1'", [account.id])
            let busy = try await client.call(.post, "meals/sync", token: account.accessToken, json: body, headers: headers)
            #expect(busy.status == 409 && busy.errorCode == "IDEMPOTENCY_KEY_IN_USE", "\(busy.text)")
            // …until it is a minute old without a job or an answer: then the retry takes it over and answers.
            try await api.database.execute(
                "UPDATE idempotency_keys SET claimed_at = now() - interval '61 seconds' WHERE user_id = $1", [account.id])
            let taken = try await client.call(.post, "meals/sync", token: account.accessToken, json: body, headers: headers)
            #expect(taken.status == 200 && taken.data["syncedLocalMeals"][0]["localId"].string == "l-1", "\(taken.text)")
            #expect(try await Self.count(api, "SELECT count(*) FROM meals WHERE user_id = $1", account.id) == 1)

            // A key older than 24 hours is forgotten: the same key is a new request.
            try await api.database.execute(
                "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE user_id = $1", [account.id])
            let other: [String: Any] = [
                "localMeals": [["localId": "l-2", "name": "Soup", "carbEstimate": 12, "createdAt": "2026-11-20T12:00:00.000Z"]]
            ]
            let fresh = try await client.call(.post, "meals/sync", token: account.accessToken, json: other, headers: headers)
            #expect(fresh.status == 200, "\(fresh.text)")
        }
    }

    @Test func aRequestThatFailedFreesItsKeyAndBadKeysAreRefused() async throws {
        try await TestAPI.run(environment: ["SYNC_WAIT_SECONDS": "0"]) { api, client in
            let account = try await api.register(client)
            try await api.database.execute("UPDATE users SET remaining_scans = 0 WHERE id = $1", [account.id])
            let headers: HTTPFields = [Self.key: "after-reset"]
            let none = try await client.call(.post, "analyze", token: account.accessToken, json: Self.photo, headers: headers)
            #expect(none.status == 429 && none.errorCode == "NO_SCANS_REMAINING")
            // Nothing was charged, so nothing holds the key: once scans are back, the retry runs.
            try await api.database.execute("UPDATE users SET remaining_scans = 3 WHERE id = $1", [account.id])
            let retry = try await client.call(.post, "analyze", token: account.accessToken, json: Self.photo, headers: headers)
            #expect(retry.status == 202, "\(retry.text)")

            for bad in ["", String(repeating: "k", count: 256), "with space", "caf\u{e9}"] {
                let refused = try await client.call(
                    .post, "chat", token: account.accessToken, json: ["message": "hi"], headers: [Self.key: bad])
                #expect(refused.status == 400 && refused.json["error"]["details"]["field"].string == "Idempotency-Key", "\(bad)")
            }
            let counted = "SELECT COALESCE(sum(used), 0)::int FROM usage_counters WHERE user_id = $1 AND kind = 'chat'"
            #expect(try await Self.count(api, counted, account.id) == 0)
        }
    }

    @Test func aRetriedDeviceRegistrationAnswersTheSameDevice() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "default")
            defer { worker.stop() }
            let body = ["deviceToken": String(repeating: "ab", count: 32), "platform": "ios"]
            let headers: HTTPFields = [Self.key: "device-1"]
            let first = try await client.call(.post, "devices/register", token: account.accessToken, json: body, headers: headers)
            #expect(first.status == 200, "\(first.text)")
            let retry = try await client.call(.post, "devices/register", token: account.accessToken, json: body, headers: headers)
            #expect(retry.status == 200 && retry.data["deviceId"].string == first.data["deviceId"].string)
            let jobs = try await api.database.query("SELECT job_id FROM idempotency_keys WHERE key = 'device-1'")
            #expect(jobs.count == 1)
            let other = ["deviceToken": String(repeating: "cd", count: 32), "platform": "ios"]
            let reused = try await client.call(.post, "devices/register", token: account.accessToken, json: other, headers: headers)
            #expect(reused.status == 422 && reused.errorCode == "IDEMPOTENCY_KEY_REUSED")
            worker.stop()
            try await task.value
        }
    }
}
