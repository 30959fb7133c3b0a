import Foundation
import JSON
import Queue
import TestSupport
import Testing
import Workers

/// The `login-webhook` kind against a local PostgREST-style `/logins` endpoint, run by real workers.
@Suite struct LoginWebhookTests {
    static let apiKey = "sb-service-key-4f1d2c3b"

    static func payload(event: String = "signin", eventID: String = UUID().uuidString.lowercased()) -> JSONValue {
        [
            "event": .string(event), "eventId": .string(eventID), "provider": "apple", "provider_uid": "001234.abcd.0567",
            "email": "ada@example.com", "display_name": .null, "client_timestamp": "2026-01-02T03:04:05.000Z",
        ]
    }

    /// Runs `body` with a PostgREST server (or, with `signOutPath`, a custom API that has the sign-out path too),
    /// stopped afterwards.
    static func withServer<T: Sendable>(
        _ env: WorkerTestEnvironment, signOutPath: Bool = false, _ body: @Sendable (PostgRESTServer) async throws -> T
    ) async throws -> T {
        let server = try await PostgRESTServer.start(apiKey: apiKey, signOutPath: signOutPath)
        defer { server.stop() }
        return try await body(server)
    }

    /// A real worker whose login-webhook retries wait 50 ms instead of the kind's 5 s backoff (a `Retry-After`
    /// still wins), so a retry test does not sleep for seconds.
    static func startFastWorker(_ env: WorkerTestEnvironment, settings: WorkerSettings) -> (JobQueue, Worker, Task<Void, any Error>) {
        var kinds = Array(env.queue.catalog.kinds.values)
        for index in kinds.indices where kinds[index].name == LoginWebhookJob.name {
            kinds[index].backoff = .fixed(.milliseconds(50))
        }
        let catalog = JobCatalog(kinds: kinds)
        let queue = JobQueue(redis: env.redis, catalog: catalog, options: QueueOptions(prefix: env.prefix))
        var services = env.services(settings)
        services.catalog = catalog
        let worker = Worker(
            queue: queue, registry: Handlers.registry(services: services),
            options: WorkerOptions(
                queues: [("webhooks", 1)], concurrency: 2, gracePeriod: .seconds(2), blockTimeout: .seconds(1),
                promoteInterval: .milliseconds(50), reclaimInterval: .milliseconds(200)),
            logger: WorkerTestEnvironment.logger)
        return (queue, worker, Task { try await worker.run() })
    }

    /// The job's record once it has succeeded or failed (dead).
    static func finished(_ env: WorkerTestEnvironment, _ id: JobID) async throws -> JobRecord {
        var record: JobRecord?
        _ = try await eventually(timeout: .seconds(20)) {
            record = try await env.queue.record(id)
            return record?.status == .succeeded || record?.status == .failed
        }
        return try #require(record)
    }

    static func enqueue(_ env: WorkerTestEnvironment, _ payload: JSONValue) async throws -> JobID {
        try #require(try await env.queue.enqueue("login-webhook", payload: payload).id)
    }

    @Test func deliversOneRowWithTheSeedHeadersAndARedeliveryChangesNothing() async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env) { server in
                let (worker, task) = env.startWorker(
                    settings: WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: Self.apiKey), queues: ["webhooks"])
                defer { worker.stop() }
                let eventID = UUID().uuidString.lowercased()
                let id = try await Self.enqueue(env, Self.payload(eventID: eventID))
                // The handler draws from the kind's shared bucket (jobs/login-webhook.yml), whose key lives 3 s past a
                // draw: watched from the enqueue on, not after the job's end, which a loaded run reached 3 s later.
                let bucket = "\(env.prefix):ratelimit:login-webhook"
                #expect(try await eventually { try await env.redis.send(["EXISTS", bucket]).int == 1 })
                let first = try await Self.finished(env, id)
                #expect(first.status == .succeeded, "\(first.error ?? "")")
                #expect(try first.result.map(JSONValue.init(parsing:)) == ["delivered": true, "status": 201])
                #expect(server.ids() == [eventID])

                let request = try #require(server.requests.first)
                #expect(request.path == "/logins")
                #expect(request.headers["apikey"] == Self.apiKey)
                #expect(request.headers["authorization"] == "Bearer \(Self.apiKey)")
                #expect(request.headers["prefer"] == "return=minimal")
                #expect(request.headers["content-type"] == "application/json")
                #expect(
                    try JSONValue(parsing: request.body) == [
                        "provider": "apple", "provider_uid": "001234.abcd.0567", "email": "ada@example.com", "display_name": .null,
                        "client_timestamp": "2026-01-02T03:04:05.000Z", "id": .string(eventID),
                    ])

                // The same event delivered again (the enqueue lock long gone, as after a lost acknowledgement):
                // the endpoint's 409 means "already there", the job succeeds, and the table keeps one row.
                _ = try await env.redis.unlinkKeys(matching: "\(env.prefix):*unique:*")
                let again = try await Self.finished(env, try await Self.enqueue(env, Self.payload(eventID: eventID)))
                #expect(again.id != first.id)
                #expect(again.status == .succeeded, "\(again.error ?? "")")
                #expect(try again.result.map(JSONValue.init(parsing:)) == ["delivered": true, "duplicate": true])
                #expect(server.requests.count == 2)
                #expect(server.ids() == [eventID])
                worker.stop()
                try await task.value
            }
        }
    }

    /// Seed 002's Supabase table has no sign-out path (PostgREST: 404 `PGRST205`); the seed says the backend may
    /// ignore sign-outs, so they are skipped, not retried into the dead set.
    @Test func aSignOutToAnEndpointWithoutTheSignOutPathIsSkipped() async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env) { server in
                let (worker, task) = env.startWorker(
                    settings: WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: Self.apiKey), queues: ["webhooks"])
                defer { worker.stop() }
                for _ in 0..<2 {
                    let record = try await Self.finished(env, try await Self.enqueue(env, Self.payload(event: "signout")))
                    #expect(record.status == .succeeded, "\(record.error ?? "")")
                    #expect(record.attempts == 1)
                    #expect(try record.result.map(JSONValue.init(parsing:))?["skipped"] != nil, "\(record.result ?? "")")
                }
                #expect(server.requests.map(\.path) == ["/logins/signout", "/logins/signout"])
                #expect(server.rows().isEmpty)
                #expect(try await env.queue.stats().first { $0.queue == "webhooks" }?.dead == 0)
                worker.stop()
                try await task.value
            }
        }
    }

    /// A custom API that has the sign-out path gets seed 002 §4's body: provider, provider_uid, client_timestamp.
    @Test func aSignOutCarriesExactlyTheSeedsThreeMembers() async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env, signOutPath: true) { server in
                let (worker, task) = env.startWorker(
                    settings: WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: Self.apiKey), queues: ["webhooks"])
                defer { worker.stop() }
                let record = try await Self.finished(env, try await Self.enqueue(env, Self.payload(event: "signout")))
                #expect(record.status == .succeeded, "\(record.error ?? "")")
                #expect(try record.result.map(JSONValue.init(parsing:)) == ["delivered": true, "status": 201])
                #expect(server.requests.map(\.path) == ["/logins/signout"])
                #expect(
                    try JSONValue(parsing: server.requests[0].body) == [
                        "provider": "apple", "provider_uid": "001234.abcd.0567", "client_timestamp": "2026-01-02T03:04:05.000Z",
                    ])
                #expect(server.rows("logins/signout").count == 1)
                #expect(server.rows().isEmpty)
                worker.stop()
                try await task.value
            }
        }
    }

    /// The endpoint inserted the row but its answer was lost (a gateway's 502): the retry is a 409 on the primary
    /// key, counted as delivered, and the table keeps one row for the event.
    @Test func aRetryAfterALostAnswerLeavesOneRow() async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env) { server in
                server.enqueue(.init(status: 502, body: "bad gateway", insertFirst: true))
                let (queue, worker, task) = Self.startFastWorker(
                    env, settings: WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: Self.apiKey))
                defer { worker.stop() }
                let eventID = UUID().uuidString.lowercased()
                let id = try #require(try await queue.enqueue("login-webhook", payload: Self.payload(eventID: eventID)).id)
                let record = try await Self.finished(env, id)
                #expect(record.status == .succeeded, "\(record.error ?? "")")
                #expect(record.attempts == 2)
                #expect(try record.result.map(JSONValue.init(parsing:)) == ["delivered": true, "duplicate": true])
                #expect(server.ids() == [eventID])
                worker.stop()
                try await task.value
            }
        }
    }

    /// `LOGIN_WEBHOOK_ID_FIELD=none`, for an API that refuses unknown members: the body is the seed's five members
    /// alone and the table makes its own id.
    @Test func withoutAnIDFieldTheBodyIsTheSeedsFiveMembers() async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env) { server in
                let settings = WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: Self.apiKey, loginWebhookIDField: nil)
                let (worker, task) = env.startWorker(settings: settings, queues: ["webhooks"])
                defer { worker.stop() }
                let eventID = UUID().uuidString.lowercased()
                let record = try await Self.finished(env, try await Self.enqueue(env, Self.payload(eventID: eventID)))
                #expect(record.status == .succeeded, "\(record.error ?? "")")
                let body = try JSONValue(parsing: try #require(server.requests.first).body)
                #expect(body["id"] == nil)
                #expect(server.rows().count == 1)
                #expect(server.ids() != [eventID])
                worker.stop()
                try await task.value
            }
        }
    }

    /// The member the old body carried (`event_id`) is no column of seed 002's table: PostgREST refuses the row.
    @Test func theSeedsTableRefusesAnUnknownMember() async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env) { server in
                let settings = WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: Self.apiKey, loginWebhookIDField: "event_id")
                let (worker, task) = env.startWorker(settings: settings, queues: ["webhooks"])
                defer { worker.stop() }
                let record = try await Self.finished(env, try await Self.enqueue(env, Self.payload()))
                #expect(record.status == .failed)
                #expect(
                    record.error?.contains("400: PGRST204 Could not find the 'event_id' column of 'logins'") == true,
                    "\(record.error ?? "")")
                #expect(server.rows().isEmpty)
                worker.stop()
                try await task.value
            }
        }
    }

    @Test func aServerErrorIsRetriedThenDelivered() async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env) { server in
                server.enqueue(.init(status: 503, body: "upstream connect error"))
                let (queue, worker, task) = Self.startFastWorker(
                    env, settings: WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: Self.apiKey))
                defer { worker.stop() }
                let id = try #require(try await queue.enqueue("login-webhook", payload: Self.payload()).id)
                let record = try await Self.finished(env, id)
                #expect(record.status == .succeeded, "\(record.error ?? "")")
                #expect(record.attempts == 2)
                #expect(record.errors.map(\.error).first?.contains("503") == true, "\(record.errors)")
                #expect(server.requests.count == 2)
                #expect(server.rows().count == 1)
                worker.stop()
                try await task.value
            }
        }
    }

    /// A 429's `Retry-After: 1` holds the retry back for a second, though the kind's backoff here is 50 ms.
    @Test func tooManyRequestsWaitsForRetryAfter() async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env) { server in
                server.enqueue(
                    .init(
                        status: 429, headers: ["Retry-After": "1", "Content-Type": "application/json"],
                        body: #"{"message":"rate limit exceeded"}"#))
                let (queue, worker, task) = Self.startFastWorker(
                    env, settings: WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: Self.apiKey))
                defer { worker.stop() }
                let id = try #require(try await queue.enqueue("login-webhook", payload: Self.payload()).id)
                let record = try await Self.finished(env, id)
                #expect(record.status == .succeeded, "\(record.error ?? "")")
                #expect(record.attempts == 2)
                let failedAt = try #require(record.errors.first?.at)
                let finishedAt = try #require(record.finishedAt)
                #expect(finishedAt.timeIntervalSince(failedAt) >= 0.9, "retried \(finishedAt.timeIntervalSince(failedAt)) s later")
                #expect(server.rows().count == 1)
                worker.stop()
                try await task.value
            }
        }
    }

    /// A wrong key (401 PGRST301) cannot get better by retrying: dead at once, the reason kept, the key never shown.
    @Test func aRejectedKeyIsDeadAtOnceWithoutLeakingIt() async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env) { server in
                let wrongKey = "sb-wrong-key-9e8d7c6b"
                let (queue, worker, task) = Self.startFastWorker(
                    env, settings: WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: wrongKey))
                defer { worker.stop() }
                let id = try #require(try await queue.enqueue("login-webhook", payload: Self.payload()).id)
                let record = try await Self.finished(env, id)
                #expect(record.status == .failed)
                #expect(record.attempts == 1)
                let error = try #require(record.error)
                #expect(error.contains("401") && error.contains("PGRST301"), "\(error)")
                #expect(!error.contains(wrongKey))
                #expect(!record.errors.contains { $0.error.contains(wrongKey) })
                #expect(server.requests.count == 1)
                #expect(server.rows().isEmpty)
                worker.stop()
                try await task.value
            }
        }
    }

    /// PostgREST's 400s (a body it cannot read, a null in a NOT NULL column) are dead at once with their code.
    @Test(arguments: [
        ("PGRST102", #"{"code":"PGRST102","details":null,"hint":null,"message":"Empty or invalid json"}"#),
        (
            "23502",
            #"{"code":"23502","details":"Failing row contains (…)","hint":null,"message":"null value in column \"provider_uid\" of relation \"logins\" violates not-null constraint"}"#
        ),
    ])
    func badRequestsAreDeadAtOnce(code: String, body: String) async throws {
        try await WorkerTestEnvironment.run { env in
            try await Self.withServer(env) { server in
                server.enqueue(.init(status: 400, headers: ["Content-Type": "application/json"], body: body))
                let (queue, worker, task) = Self.startFastWorker(
                    env, settings: WorkerSettings(loginWebhookURL: server.url, loginWebhookAPIKey: Self.apiKey))
                defer { worker.stop() }
                let id = try #require(try await queue.enqueue("login-webhook", payload: Self.payload()).id)
                let record = try await Self.finished(env, id)
                #expect(record.status == .failed)
                #expect(record.attempts == 1)
                #expect(record.error?.contains("400: \(code)") == true, "\(record.error ?? "")")
                #expect(server.requests.count == 1)
                worker.stop()
                try await task.value
            }
        }
    }

    /// An endpoint that is down is retried, not buried.
    @Test func anUnreachableEndpointIsRetried() async throws {
        try await WorkerTestEnvironment.run { env in
            let (queue, worker, task) = Self.startFastWorker(
                env, settings: WorkerSettings(loginWebhookURL: "http://127.0.0.1:9", loginWebhookAPIKey: Self.apiKey))
            defer { worker.stop() }
            let id = try #require(try await queue.enqueue("login-webhook", payload: Self.payload()).id)
            var record: JobRecord?
            let retried = try await eventually(timeout: .seconds(20)) {
                record = try await queue.record(id)
                return (record?.attempts ?? 0) >= 2
            }
            #expect(retried, "\(String(describing: record))")
            #expect(record?.errors.first?.error.contains("unreachable") == true, "\(String(describing: record?.errors))")
            #expect(record?.status != .failed)
            worker.stop()
            try await task.value
        }
    }

    @Test func withoutAURLTheJobFailsWithAConfigurationReason() async throws {
        try await WorkerTestEnvironment.run { env in
            let (worker, task) = env.startWorker(settings: WorkerSettings(), queues: ["webhooks"])
            defer { worker.stop() }
            let record = try await Self.finished(env, try await Self.enqueue(env, Self.payload()))
            #expect(record.status == .failed)
            #expect(record.attempts == 1)
            #expect(record.error?.contains("LOGIN_WEBHOOK_URL") == true, "\(record.error ?? "")")
            worker.stop()
            try await task.value
        }
    }
}
