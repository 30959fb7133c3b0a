import Foundation
import JSON
import OutboundHTTP
import Postgres
import Queue
import Store
import TestSupport
import Testing

@testable import Workers

/// analysis and chat against a local server speaking OpenAI's chat completions protocol, errors included.
@Suite struct AIJobsTests {
    static let key = "sk-test-secret-key"

    static func estimate(carbs: Double = 45, high: Double = 50) -> JSONValue {
        [
            "compositeItemName": "Chicken salad with rice", "carbEstimate": .double(carbs), "confidenceLow": 40,
            "confidenceHigh": .double(high), "confidenceLevel": 0.85, "analysis": "Rice about 40 g, dressing 5 g.",
        ]
    }
    static let chatAnswer: JSONValue = [
        "response": "A medium banana has about 27 g of carbohydrates.", "messageType": "carb_lookup",
        "followUpQuestions": ["What about a small banana?", "Are bananas good for diabetics?"],
    ]

    func settings(_ server: OpenAIServer?) -> WorkerSettings {
        WorkerSettings(aiBaseURL: server?.baseURL, aiAPIKey: Self.key, aiModel: "gpt-4o-mini")
    }

    /// A user with a stored photo and the scan it holds for its analysis job `id` (as `POST /analyze` leaves them).
    func photo(_ env: WorkerTestEnvironment, job id: JobID = .random()) async throws -> (user: User, photoID: Int64) {
        let user = try await env.createUser()
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 7, count: 64)
        let photoID = try await MealPhotos(env.database).insert(userID: user.id, contentType: "image/jpeg", bytes: jpeg)
        try await ScanReservations(env.database).insert(photoID: photoID, userID: user.id, jobID: id.rawValue)
        try await env.database.execute("UPDATE users SET remaining_scans = remaining_scans - 1 WHERE id = $1", [user.id])
        return (user, photoID)
    }

    /// Enqueues the photo's analysis as `POST /analyze` does: with the id its reservation names, holding the scan.
    func enqueueAnalysis(_ env: WorkerTestEnvironment, _ user: User, _ photoID: Int64, job id: JobID) async throws -> JobID {
        let payload: JSONValue = ["userId": .string(user.id), "photoId": .string(String(photoID))]
        let options = EnqueueOptions(owner: user.id, id: id, reservation: QuotaReservation.scan(photoID: photoID).text)
        return try #require(try await env.queue.enqueue("analysis", payload: payload, options: options).id)
    }

    func scanStatus(_ env: WorkerTestEnvironment, _ photoID: Int64, becomes status: String) async throws -> Bool {
        try await eventually { try await ScanReservations(env.database).status(photoID: photoID) == status }
    }

    func remainingScans(_ env: WorkerTestEnvironment, _ userID: String) async throws -> Int {
        try await env.database.query("SELECT remaining_scans FROM users WHERE id = $1", [userID])[0].decode("remaining_scans")
    }

    func count(_ env: WorkerTestEnvironment, _ sql: String, _ parameters: [(any PostgresEncodable)?]) async throws -> Int {
        try await env.database.query(sql, parameters)[0].decode(0)
    }

    func finished(_ env: WorkerTestEnvironment, _ id: JobID) async throws -> JobRecord {
        #expect(
            try await eventually(timeout: .seconds(30)) {
                let status = try await env.queue.record(id)?.status
                return status == .succeeded || status == .failed
            })
        return try #require(try await env.queue.record(id))
    }

    @Test func analysisWritesOneMealAndChargesTheScan() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.estimate()))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let id = JobID.random()
            let (user, photoID) = try await photo(env, job: id)
            let (worker, task) = env.startWorker(settings: settings(server), queues: ["ai"])
            _ = try await enqueueAnalysis(env, user, photoID, job: id)
            let record = try await finished(env, id)
            #expect(try await scanStatus(env, photoID, becomes: "charged"))
            worker.stop()
            try await task.value
            #expect(record.status == .succeeded)
            let result = try JSONValue(parsing: try #require(record.result))
            #expect(result["analysis"]?["carbEstimate"]?.numberValue == 45)
            #expect(result["analysis"]?["compositeItemName"] == .string("Chicken salad with rice"))
            #expect(try await count(env, "SELECT count(*) FROM meals WHERE job_id = $1::uuid AND carb_estimate = 45", [id.rawValue]) == 1)
            #expect(try await ScanReservations(env.database).status(photoID: photoID) == "charged")
            #expect(try await remainingScans(env, user.id) == Tier.free.scanLimit - 1)

            // The request: our key as a Bearer token, the photo as a data URL, a JSON-schema response format.
            let request = try #require(server.received.first)
            #expect(request.authorization == "Bearer \(Self.key)")
            #expect(request.body.contains("data:image/jpeg;base64,/9j/"))
            #expect(request.body.contains(#""json_schema""#))

            // A re-delivery of the same job (same id) writes no second meal and charges nothing more.
            let handler = try #require(Handlers.registry(services: env.services(settings(server))).handler(for: "analysis"))
            let payload = #"{"userId":"\#(user.id)","photoId":"\#(photoID)"}"#
            _ = try await handler(payload, JobContext(id: id, kind: "analysis", attempt: 2, maxAttempts: 4))
            #expect(try await count(env, "SELECT count(*) FROM meals WHERE user_id = $1", [user.id]) == 1)
            #expect(try await remainingScans(env, user.id) == Tier.free.scanLimit - 1)
        }
    }

    /// An analysis that keeps getting an impossible estimate is retried, its scan still held; it dies after its last
    /// attempt (4, within 2 + 4 + 8 s of backoff) and the queue gives the scan back, once: the same settlement handed
    /// over again (a leader that died before forgetting it) changes nothing, nor does a late charge.
    @Test func aDeadAnalysisGivesItsScanBackExactlyOnce() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.estimate(carbs: 2000, high: 2100)))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let id = JobID.random()
            let (user, photoID) = try await photo(env, job: id)
            let (worker, task) = env.startWorker(settings: settings(server), queues: ["ai"])
            _ = try await enqueueAnalysis(env, user, photoID, job: id)
            #expect(try await eventually { try await env.queue.record(id)?.status == .retrying })
            #expect(try await ScanReservations(env.database).status(photoID: photoID) == "reserved")
            #expect(try await remainingScans(env, user.id) == Tier.free.scanLimit - 1)
            #expect(try await eventually(timeout: .seconds(60)) { try await env.queue.record(id)?.status == .failed })
            #expect(try await scanStatus(env, photoID, becomes: "refunded"))
            worker.stop()
            try await task.value
            let record = try #require(try await env.queue.record(id))
            #expect(record.attempts == 4)
            #expect(record.error?.contains("outside 0–1000 g") == true)
            #expect(try await remainingScans(env, user.id) == Tier.free.scanLimit)
            let scan = QuotaReservation.scan(photoID: photoID).text
            try await QuotaLedger(database: env.database).settle([
                Settlement(reservation: scan, job: id, outcome: .release), Settlement(reservation: scan, job: id, outcome: .charge),
            ])
            #expect(try await ScanReservations(env.database).status(photoID: photoID) == "refunded")
            #expect(try await remainingScans(env, user.id) == Tier.free.scanLimit)
            #expect(try await count(env, "SELECT count(*) FROM meals WHERE user_id = $1", [user.id]) == 0)
        }
    }

    @Test func withoutAnAIModelTheJobDiesWithAConfigurationErrorAndRefunds() async throws {
        try await WorkerTestEnvironment.run { env in
            let id = JobID.random()
            let (user, photoID) = try await photo(env, job: id)
            let (worker, task) = env.startWorker(settings: settings(nil), queues: ["ai"])
            _ = try await enqueueAnalysis(env, user, photoID, job: id)
            let record = try await finished(env, id)
            #expect(try await scanStatus(env, photoID, becomes: "refunded"))
            worker.stop()
            try await task.value
            #expect(record.status == .failed)
            #expect(record.attempts == 1)
            #expect(record.error?.contains("AI_BASE_URL is not configured") == true)
            #expect(try await remainingScans(env, user.id) == Tier.free.scanLimit)
            #expect(try await count(env, "SELECT count(*) FROM meals", []) == 0)
        }
    }

    @Test func chatAnswersAreStoredOncePerJob() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.chatAnswer))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser()
            let (worker, task) = env.startWorker(settings: settings(server), queues: ["ai"])
            let payload: JSONValue = [
                "userId": .string(user.id), "messageId": .string(UUID().uuidString.lowercased()), "message": "Carbs in a banana?",
            ]
            let id = try #require(try await env.queue.enqueue("chat", payload: payload).id)
            let record = try await finished(env, id)
            worker.stop()
            try await task.value
            #expect(record.status == .succeeded)
            let result = try JSONValue(parsing: try #require(record.result))
            #expect(result["messageType"] == .string("carb_lookup"))
            #expect(result["followUpQuestions"] == .array(["What about a small banana?", "Are bananas good for diabetics?"]))
            let handler = try #require(Handlers.registry(services: env.services(settings(server))).handler(for: "chat"))
            _ = try await handler(payload.jsonString, JobContext(id: id, kind: "chat", attempt: 2, maxAttempts: 3))
            #expect(
                try await count(env, "SELECT count(*) FROM chat_messages WHERE user_id = $1 AND message_type = 'carb_lookup'", [user.id])
                    == 1)
        }
    }

    /// The answer and the day's usage are one statement: an essentials user (20 a day) with two chats counted today
    /// gets 18 left, and a re-delivery of the job finds its stored answer (same id, same usage) without a second row.
    /// The handler settles nothing (the queue charges the reservation when it records the success): the ledger's
    /// charge, handed over twice, charges once.
    @Test func aChatReportsTheDaysUsageOnceAndTheLedgerChargesIt() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.chatAnswer))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser(tier: .essentials)
            let day = "2026-11-25"
            let messageID = UUID().uuidString.lowercased()
            for _ in 0..<2 { _ = try await ChatQuota(env.database).take(userID: user.id, day: day, limit: 20) }
            let id = JobID.random()
            try await ChatReservations(env.database).insert(messageID: messageID, userID: user.id, day: day, jobID: id.rawValue)
            let handler = try #require(Handlers.registry(services: env.services(settings(server))).handler(for: "chat"))
            let payload: JSONValue = ["userId": .string(user.id), "messageId": .string(messageID), "message": "Carbs in a banana?"]
            var results: [JSONValue] = []
            for attempt in 1...2 {
                let result = try await handler(payload.jsonString, JobContext(id: id, kind: "chat", attempt: attempt, maxAttempts: 3))
                results.append(try JSONValue(parsing: try #require(result)))
            }
            #expect(results[0] == results[1])
            #expect(results[0]["usage"] == ["remainingChats": 18, "totalUsedToday": 2, "subscriptionTier": "essentials"])
            #expect(results[0]["messageId"]?.numberValue.map(Int.init) != nil)
            #expect(try await ChatReservations(env.database).status(messageID: messageID) == "reserved")
            let charge = Settlement(reservation: QuotaReservation.chat(messageID: messageID).text, job: id, outcome: .charge)
            try await QuotaLedger(database: env.database).settle([charge, charge])
            #expect(try await ChatReservations(env.database).status(messageID: messageID) == "charged")
            #expect(try await ChatQuota(env.database).used(userID: user.id, day: day) == 2)
            #expect(try await count(env, "SELECT count(*) FROM chat_messages WHERE job_id = $1::uuid", [id.rawValue]) == 1)
        }
    }

    /// One case per provider behaviour: (replies, expected final status, attempts, text the error must hold).
    @Test(arguments: [
        (
            [
                OpenAIServer.Reply.error(
                    status: 401, type: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided")
            ],
            JobStatus.failed, 1, "invalid_api_key"
        ),
        (
            [.error(status: 429, type: "rate_limit_exceeded", code: "rate_limit_exceeded", message: "Rate limit reached", retryAfter: 1)],
            .succeeded, 2, ""
        ),
        ([.error(status: 500, type: "server_error", code: nil, message: "The server had an error")], .succeeded, 2, ""),
        ([.raw(#"{"choices": [{"message": {"content": "{\"response\": \"x\""#)], .succeeded, 2, ""),
        ([.content("Sure! Bananas have carbs.")], .succeeded, 2, ""),
        ([.content(#"{"response":"x","messageType":"general","followUpQuestions":[]"#, finishReason: "length")], .succeeded, 2, ""),
    ])
    func providerFailuresAreRetriedOrDead(_ replies: [OpenAIServer.Reply], expected: JobStatus, attempts: Int, errorText: String)
        async throws
    {
        let server = try await OpenAIServer.start(fallback: .json(Self.chatAnswer))
        defer { server.stop() }
        server.script(replies)
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser()
            let (worker, task) = env.startWorker(settings: settings(server), queues: ["ai"])
            let payload: JSONValue = ["userId": .string(user.id), "messageId": .string(UUID().uuidString.lowercased()), "message": "Hi"]
            let id = try #require(try await env.queue.enqueue("chat", payload: payload).id)
            let record = try await finished(env, id)
            worker.stop()
            try await task.value
            #expect(record.status == expected)
            #expect(record.attempts == attempts)
            if !errorText.isEmpty { #expect(record.error?.contains(errorText) == true) }
            #expect(record.error?.contains(Self.key) != true)
            #expect(record.errors.allSatisfy { !$0.error.contains(Self.key) })
        }
    }

    @Test func aSlowAnswerPastTheKindsTimeoutIsRetried() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.chatAnswer))
        defer { server.stop() }
        server.script([.slow(.seconds(3), .json(Self.chatAnswer))])
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser()
            // The request's timeout follows the kind's: 2 s here leaves the request 1.5 s, short of the 3 s answer.
            var services = env.services(settings(server))
            services.catalog = JobCatalog(
                kinds: env.queue.catalog.kinds.values.map { kind in
                    var kind = kind
                    if kind.name == "chat" { kind.timeout = .seconds(2) }
                    return kind
                })
            let handler = try #require(Handlers.registry(services: services).handler(for: "chat"))
            let payload = #"{"userId":"\#(user.id)","messageId":"\#(UUID().uuidString)","message":"Hi"}"#
            do {
                _ = try await handler(payload, JobContext(id: .random(), kind: "chat", attempt: 1, maxAttempts: 3))
                Issue.record("a slow answer was waited for")
            } catch let failure as JobFailure {
                #expect(failure.kind == .retryable)
                #expect(failure.message.contains("AI request failed"))
            }
            // The next attempt gets the answer.
            let result = try await handler(payload, JobContext(id: .random(), kind: "chat", attempt: 2, maxAttempts: 3))
            #expect(result?.contains("carb_lookup") == true)
        }
    }

    /// llama-server generates until the context is full without `max_tokens` (a third of the attempts ran into the
    /// length limit or the timeout): every request carries the kind's bound, and the chat is answered at once.
    @Test func everyRequestCarriesTheKindsTokenBoundAndTimeout() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.chatAnswer), llamaCpp: .init(vision: true))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser()
            var settings = settings(server)
            settings.aiMaxTokens["chat"] = 321
            let handler = try #require(Handlers.registry(services: env.services(settings)).handler(for: "chat"))
            let payload = #"{"userId":"\#(user.id)","messageId":"\#(UUID().uuidString)","message":"Hi"}"#
            let result = try await handler(payload, JobContext(id: .random(), kind: "chat", attempt: 1, maxAttempts: 3))
            #expect(result?.contains("carb_lookup") == true)
            let sent = try JSONValue(parsing: try #require(server.received.last).body)
            #expect(sent["max_tokens"] == 321)
            #expect(try WorkerSettings.fromEnvironment(["AI_MAX_TOKENS_CHAT": "99"]).aiMaxTokens(forKind: "chat") == 99)
            #expect(try WorkerSettings.fromEnvironment([:]).aiMaxTokens(forKind: "analysis") == 700)
            // jobs/chat.yml's 45 s timeout leaves the request 40 s (libcurl's fixed 30 s used to end it sooner).
            #expect(AIClient(services: env.services(settings)).requestTimeout(forKind: "chat") == .seconds(40))
        }
    }

    /// A text-only model refuses the photo (llama-server: 500 "image input is not supported"): that is no passing
    /// fault, so the analysis dies at its first attempt with a reason that says so, and its scan is refunded.
    @Test func aModelThatCannotTakeImagesKillsTheAnalysisAtOnceWithTheReason() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.estimate()), llamaCpp: .init(vision: false))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let id = JobID.random()
            let (user, photoID) = try await photo(env, job: id)
            let (worker, task) = env.startWorker(settings: settings(server), queues: ["ai"])
            _ = try await enqueueAnalysis(env, user, photoID, job: id)
            let record = try await finished(env, id)
            #expect(try await scanStatus(env, photoID, becomes: "refunded"))
            worker.stop()
            try await task.value
            #expect(record.status == .failed)
            #expect(record.attempts == 1)
            #expect(record.error?.contains("cannot take images") == true, "\(record.error ?? "")")
            #expect(server.received.count == 1)
        }
    }

    /// What a worker logs at start-up: the server's models, and (llama.cpp's `/props`) whether the model has vision.
    @Test func theProbeReportsTheServersModelsAndVision() async throws {
        let llama = try await OpenAIServer.start(fallback: .json(Self.chatAnswer), llamaCpp: .init(vision: false, model: "tiny.gguf"))
        defer { llama.stop() }
        let openAI = try await OpenAIServer.start(fallback: .json(Self.chatAnswer))
        defer { openAI.stop() }
        try await WorkerTestEnvironment.run { env in
            #expect(await AIModelProbe(services: env.services(settings(llama))).run() == .init(models: ["tiny.gguf"], vision: false))
            #expect(await AIModelProbe(services: env.services(settings(openAI))).run() == .init(models: ["gpt-4o-mini"], vision: nil))
            #expect(await AIModelProbe(services: env.services(settings(nil))).run() == nil)
        }
    }

    /// jobs/chat.yml shares the `ai` bucket (10/s, burst 20) with analysis: two worker processes (each its own Redis
    /// connections) together never go faster. 45 requests need at least (45 − 20) / 10 = 2.5 s; unlimited, they
    /// take a fraction of a second.
    @Test func theAIRateLimitHoldsAcrossTwoWorkers() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.chatAnswer))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser()
            let spec = try #require(env.queue.catalog["chat"]?.rateLimit)
            #expect(spec.name == "ai")
            let first = env.startWorker(settings: settings(server), queues: ["ai"], concurrency: 30)
            let second = env.startWorker(settings: settings(server), queues: ["ai"], concurrency: 30)
            let ids = try await env.queue.enqueue(
                (0..<45).map { index in
                    (
                        "chat",
                        [
                            "userId": .string(user.id), "messageId": .string(UUID().uuidString.lowercased()),
                            "message": .string("Q\(index)"),
                        ],
                        EnqueueOptions()
                    )
                }
            ).compactMap(\.id)
            #expect(
                try await eventually(timeout: .seconds(30)) {
                    try await env.queue.stats().first { $0.queue == "ai" }?.succeededTotal == ids.count
                })
            for (worker, _) in [first, second] { worker.stop() }
            for (_, task) in [first, second] { try await task.value }
            let times = server.received.map(\.at)
            #expect(times.count == 45)
            let span = try #require(times.max()) - (try #require(times.min()))
            #expect(span >= .seconds(2))
        }
    }
}
