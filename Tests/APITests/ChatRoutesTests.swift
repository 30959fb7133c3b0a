import Foundation
import JSON
import OutboundHTTP
import Store
import TestSupport
import Testing
import Workers

/// `POST /chat` end to end: the API, a worker in this process and a local OpenAI-compatible model.
@Suite struct ChatRoutesTests {
    static let answer: JSONValue = [
        "response": "A medium banana has about 27 g of carbohydrates.", "messageType": "carb_lookup",
        "followUpQuestions": ["What about a small banana?", "Are bananas good for diabetics?", "What fruits have fewer carbs?"],
    ]

    @Test func aChatMessageIsAnsweredInTheSeedsShape() async throws {
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let response = try await client.call(
                .post, "chat", token: account.accessToken, json: ["message": "How many carbs are in a banana?"])
            worker.stop()
            try await task.value
            #expect(response.status == 200)
            #expect(response.data["response"].string == "A medium banana has about 27 g of carbohydrates.")
            #expect(response.data["messageType"].string == "carb_lookup")
            #expect(response.data["followUpQuestions"].array.count == 3)
            #expect(response.data["usage"]["remainingChats"].int == 4)
            #expect(response.data["usage"]["totalUsedToday"].int == 1)
            #expect(response.data["usage"]["subscriptionTier"].string == "free")
            let history = try await client.call(.get, "chat/history", token: account.accessToken)
            #expect(history.data["messages"][0]["message"].string == "How many carbs are in a banana?")
            #expect(history.data["count"].int == 1)
        }
    }

    @Test func respondAsyncAnswers202AndTheJobCarriesTheAnswer() async throws {
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let accepted = try await client.call(
                .post, "chat", token: account.accessToken, json: ["message": "Carbs in rice?"], headers: [.init("Prefer")!: "respond-async"]
            )
            #expect(accepted.status == 202)
            let jobID = try #require(accepted.data["jobId"].string)
            #expect(accepted.headers[.location] == "/api/mobile/v1/jobs/\(jobID)")
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let job = try await client.call(.get, "jobs/\(jobID)?wait=15", token: account.accessToken)
            worker.stop()
            try await task.value
            #expect(job.data["status"].string == "succeeded")
            #expect(job.data["type"].string == "chat")
            // The body of the 200 (the stored history row id is not in it).
            #expect(job.data["result"].keys == ["response", "messageType", "followUpQuestions", "usage"])
            #expect(job.data["result"]["messageType"].string == "carb_lookup")
            // The same `usage` as a sync 200 has (seed 001), as of the answer.
            #expect(job.data["result"]["usage"]["totalUsedToday"].int == 1)
            #expect(job.data["result"]["usage"]["remainingChats"].int == 4)
            #expect(job.data["result"]["usage"]["subscriptionTier"].string == "free")
        }
    }

    /// A chat whose job dies (here: the model refuses the key, a permanent 401) is given back to the day, exactly
    /// once; a chat that is answered stays counted. It used to cost the user a chat either way.
    @Test func aChatWhoseJobDiesIsRefundedOnceAndAnAnsweredOneIsCharged() async throws {
        let refusing = try await OpenAIServer.start(
            fallback: .error(status: 401, type: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided"))
        defer { refusing.stop() }
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            var (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: refusing.baseURL, aiAPIKey: "sk-bad"))
            for _ in 0..<2 {
                let failed = try await client.call(.post, "chat", token: account.accessToken, json: ["message": "Carbs in an apple?"])
                #expect(failed.status == 502 && failed.errorCode == "JOB_FAILED", "\(failed.text)")
            }
            // The queue settles what each dead job held (the upkeep leader, every 100 ms here).
            #expect(
                try await eventually {
                    try await api.database.query(
                        "SELECT count(*)::int AS n FROM chat_reservations WHERE user_id = $1 AND status = 'refunded'", [account.id]
                    )[0].decode("n") == 2
                })
            worker.stop()
            try await task.value
            var status = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(status.data["chat"]["usedToday"].int == 0, "\(status.text)")
            #expect(status.data["chat"]["remaining"].int == 5)
            let rows = try await api.database.query(
                "SELECT status, count(*)::int AS n FROM chat_reservations WHERE user_id = $1 GROUP BY status", [account.id])
            #expect(try rows.map { "\(try $0.decode("status", as: String.self))=\(try $0.decode("n", as: Int.self))" } == ["refunded=2"])

            (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let answered = try await client.call(.post, "chat", token: account.accessToken, json: ["message": "Carbs in a banana?"])
            #expect(
                try await eventually {
                    try await api.database.query(
                        "SELECT count(*)::int AS n FROM chat_reservations WHERE user_id = $1 AND status = 'charged'", [account.id]
                    )[0].decode("n") == 1
                })
            worker.stop()
            try await task.value
            #expect(answered.status == 200 && answered.data["usage"]["totalUsedToday"].int == 1, "\(answered.text)")
            status = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(status.data["chat"]["usedToday"].int == 1)
            #expect(
                try await api.database.query(
                    "SELECT count(*)::int AS n FROM chat_reservations WHERE user_id = $1 AND status = 'reserved'", [account.id]
                )[0].decode("n") == 0)
            // A refund runs once: the dead jobs' reservations, refunded again (a redelivery), change nothing.
            let dead = try await api.database.query(
                "SELECT message_id::text AS id FROM chat_reservations WHERE user_id = $1 AND status = 'refunded'", [account.id])
            for row in dead { #expect(try await ChatReservations(api.database).refund(messageID: try row.decode("id")) == false) }
            status = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(status.data["chat"]["usedToday"].int == 1)
        }
    }

    @Test func withoutAWorkerTheWaitRunsOutInto202() async throws {
        try await TestAPI.run(environment: ["SYNC_WAIT_SECONDS": "0.5"]) { api, client in
            let account = try await api.register(client)
            let response = try await client.call(.post, "chat", token: account.accessToken, json: ["message": "Hi"])
            #expect(response.status == 202)
            #expect(response.data["status"].string == "queued")
        }
    }

    @Test func theDailyLimitFollowsTheTierAndTheUsersDay() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            try await api.database.execute("UPDATE users SET time_zone = 'Pacific/Kiritimati' WHERE id = $1", [account.id])
            let today = UsageCounters.day(of: Date(), in: TimeZone(identifier: "Pacific/Kiritimati")!)
            try await api.database.execute(
                "INSERT INTO usage_counters (user_id, kind, period, used) VALUES ($1, 'chat', $2, 5)", [account.id, today])
            let refused = try await client.call(.post, "chat", token: account.accessToken, json: ["message": "One more?"])
            #expect(refused.status == 429)
            #expect(refused.errorCode == "CHAT_LIMIT_REACHED")
            #expect(refused.json["error"]["details"]["remainingChats"].int == 0)
            #expect(refused.json["error"]["details"]["dailyLimit"].int == 5)
            #expect(refused.json["error"]["details"]["subscriptionTier"].string == "free")
            #expect(try await api.queue.stats().first { $0.queue == "ai" }?.queued == 0)

            // Pro is unlimited.
            try await api.setTier(.pro, userID: account.id)
            let pro = try await client.call(
                .post, "chat", token: account.accessToken, json: ["message": "One more?"], headers: [.init("Prefer")!: "respond-async"])
            #expect(pro.status == 202)
            #expect(try await api.queue.stats().first { $0.queue == "ai" }?.queued == 1)
        }
    }

    @Test func badMessagesAreRefused() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            for body in [["message": String(repeating: "x", count: 1001)], ["message": "   "], ["text": "hi"]] {
                let refused = try await client.call(.post, "chat", token: account.accessToken, json: body)
                #expect(refused.status == 400)
                #expect(refused.errorCode == "VALIDATION_ERROR")
            }
            #expect(try await client.call(.post, "chat", json: ["message": "hi"]).status == 401)
            let used = try await api.database.query("SELECT count(*) FROM usage_counters")
            #expect(try used[0].decode(0, as: Int.self) == 0)
        }
    }
}
