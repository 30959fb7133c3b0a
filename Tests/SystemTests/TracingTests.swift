import Foundation
import JSON
import Queue
import Redis
import TestSupport
import Testing

/// OpenTelemetry tracing across the real processes: an app's request through `carbscan serve`, its job through
/// `carbscan work`, and the model's call, as one trace at a local OTLP/HTTP receiver (protobuf, as a collector takes it).
@Suite struct TracingTests {
    static let answer: JSONValue = [
        "response": "A cup of cooked rice has about 45 g of carbohydrates.", "messageType": "carb_lookup",
        "followUpQuestions": ["And brown rice?"],
    ]
    /// The model's key: must never reach a span.
    static let canary = "sk-canary-\(UUID().uuidString)"

    /// A W3C `traceparent` as an app that traces would send it, with its trace and span ids.
    static func appContext() -> (header: String, traceID: String, spanID: String) {
        func hex(_ bytes: Int) -> String { (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
        let traceID = hex(16)
        let spanID = hex(8)
        return ("00-\(traceID)-\(spanID)-01", traceID, spanID)
    }

    /// `carbscan serve` and `carbscan work --queues ai` on a scratch database, with `tracing` added to both
    /// environments (the worker's without `OTEL_SERVICE_NAME`: it names itself); `body` gets the API, the processes
    /// and the job queue.
    static func withSystem(
        model: OpenAIServer, tracing: [String: String],
        _ body: (ServeClient, RunningProcess, RunningProcess, JobQueue) async throws -> Void
    ) async throws {
        try await withScratchDatabase { url in
            let port = CarbScanBinary.freePort()
            let prefix = "trace-\(UUID().uuidString.prefix(8))"
            let environment = [
                "DATABASE_URL": url, "JWT_SECRET": String(repeating: "t", count: 40), "CARBSCAN_PREFIX": prefix,
                "SYNC_WAIT_SECONDS": "10", "AI_BASE_URL": model.baseURL, "AI_API_KEY": canary,
            ]
            let server = try CarbScanBinary.start(
                ["serve", "--port", String(port), "--migrate"], environment: environment.merging(tracing) { $1 })
            defer { server.signal(SIGKILL) }
            let api = ServeClient(port: port)
            #expect(try await eventually(timeout: .seconds(30)) { (try? await api.call("GET", "health"))?.0 == 200 }, "\(server.output)")
            var workerTracing = tracing
            workerTracing["OTEL_SERVICE_NAME"] = nil
            let worker = try CarbScanBinary.start(["work", "--queues", "ai"], environment: environment.merging(workerTracing) { $1 })
            defer { worker.signal(SIGKILL) }
            let queue = JobQueue(
                redis: try RedisClient(url: TestServices.redisURL),
                catalog: try JobCatalog.load(directory: CarbScanBinary.jobsDirectory().path),
                options: QueueOptions(prefix: prefix))
            defer { queue.redis.close() }
            try await body(api, server, worker, queue)
            await removeKeys(prefix: prefix, redis: queue.redis)
        }
    }

    static func signUp(_ api: ServeClient) async throws -> String {
        let (_, session) = try await api.call(
            "POST", "auth/register", json: #"{"email":"trace-\#(UUID().uuidString.prefix(8))@example.com","password":"correct horse"}"#)
        return try #require(session["accessToken"] as? String)
    }

    @Test(.timeLimit(.minutes(2)))
    func anAppsChatIsOneTraceFromTheRequestToTheModel() async throws {
        let receiver = try await OTLPReceiver.start()
        defer { receiver.stop() }
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        // Loopback is a trusted proxy here, so the chat (forwarded for a client) and the read (not) name their clients apart.
        let settings = ["TRACE_STATEMENTS": "true", "TRUSTED_PROXIES": "127.0.0.1/32"]
        let tracing = receiver.environment(service: "carbscan-api").merging(settings) { $1 }
        try await Self.withSystem(model: model, tracing: tracing) { api, server, worker, queue in
            let token = try await Self.signUp(api)
            let app = Self.appContext()
            let (status, _) = try await api.call(
                "POST", "chat", token: token, json: #"{"message":"Carbs in rice?"}"#,
                headers: ["traceparent": app.header, "X-Forwarded-For": "203.0.113.7"])
            #expect(status == 200)
            // A read whose query carries a secret (as a careless client might send it): the span keeps its name only.
            let read = Self.appContext()
            let (listed, _) = try await api.call(
                "GET", "meals?limit=5&access_token=\(token)", token: token, headers: ["traceparent": read.header])
            #expect(listed == 200)
            var spans = try await receiver.waitForSpans { spans in
                let trace = spans.filter { $0.traceID == app.traceID }
                return trace.contains { $0.kind == .consumer }
                    && trace.contains {
                        $0.service == "carbscan-worker" && $0.kind == .client
                            && $0.attributes["http.request.method"] == "POST"
                    } && trace.contains { $0.kind == .server } && spans.contains { $0.traceID == read.traceID && $0.kind == .server }
            }
            let listing = try #require(spans.first { $0.traceID == read.traceID && $0.kind == .server }, "\(spans)")
            #expect(listing.name == "GET /api/mobile/v1/meals")
            #expect(listing.attributes["url.query"] == "limit=5&access_token=REDACTED")
            #expect(listing.attributes["http.response.status_code"] == 200)
            #expect(listing.attributes["network.peer.address"] == "127.0.0.1" && listing.attributes["client.address"] == "127.0.0.1")
            spans = spans.filter { $0.traceID == app.traceID }

            // The API's server span continues the app's span; its enqueue is a producer span under it.
            let request = try #require(spans.first { $0.kind == .server && $0.service == "carbscan-api" }, "\(spans)")
            #expect(request.parentSpanID == app.spanID && request.name == "POST /api/mobile/v1/chat")
            #expect(request.attributes["http.request.method"] == "POST")
            #expect(request.attributes["http.route"] == "/api/mobile/v1/chat")
            #expect(request.attributes["http.response.status_code"] == 200)
            #expect(request.attributes["network.peer.address"] == "127.0.0.1" && request.attributes["client.address"] == "203.0.113.7")
            let send = try #require(spans.first { $0.kind == .producer }, "\(spans)")
            #expect(send.service == "carbscan-api" && send.name == "send ai")
            #expect(Self.ancestors(of: send, in: spans).contains(request.spanID))
            #expect(send.attributes["messaging.destination.name"] == "ai" && send.attributes["messaging.operation.type"] == "send")
            // The worker's run of the job is the producer's child, in the other process.
            let run = try #require(spans.first { $0.kind == .consumer }, "\(spans)")
            #expect(run.service == "carbscan-worker" && run.name == "process ai")
            #expect(run.parentSpanID == send.spanID)
            #expect(run.attributes["carbscan.job.kind"] == "chat" && run.attributes["carbscan.job.attempt"] == 1)
            #expect(run.attributes["messaging.message.id"] == send.attributes["messaging.message.id"])
            #expect(run.status == .unset)
            // The model's call is a client span of the run, and the model was sent its context.
            let call = try #require(spans.first { $0.kind == .client && $0.attributes["http.request.method"] == "POST" }, "\(spans)")
            #expect(Self.ancestors(of: call, in: spans).contains(run.spanID))
            #expect(call.attributes["http.response.status_code"] == 200)
            #expect(call.attributes["url.full"]?.string == "\(model.baseURL)/v1/chat/completions")
            let sent = try #require(model.received.last?.traceparent, "the model got no traceparent")
            #expect(sent.split(separator: "-").map(String.init) == ["00", app.traceID, call.spanID, "01"])
            // Statements from both processes (`TRACE_STATEMENTS=true`), their SQL without values.
            let statements = spans.filter { $0.attributes["db.system.name"] == "postgresql" }
            #expect(Set(statements.compactMap(\.service)) == ["carbscan-api", "carbscan-worker"], "\(statements)")
            #expect(statements.allSatisfy { $0.attributes["db.query.text"]?.string?.isEmpty == false })
            // The job's record names the trace (the dashboard's job page shows it).
            let jobID = try #require(run.attributes["messaging.message.id"]?.string.flatMap(JobID.init(rawValue:)))
            #expect(try await queue.record(jobID)?.traceID == app.traceID)
            // The worker's lines about the job carry the trace and the attempt's span.
            #expect(
                worker.output.split(separator: "\n").contains {
                    $0.contains("job succeeded") && $0.contains(#""trace_id":"\#(app.traceID)""#)
                        && $0.contains(#""span_id":"\#(run.spanID)","trace_flags":"1""#)
                },
                "\(worker.output)")
            // Secrets stay out: the model's key, the user's token.
            let everything = try receiver.spans().map { "\($0.attributes) \($0.resource)" }.joined()
            #expect(!everything.contains(Self.canary) && !everything.contains(token))
            #expect(!server.output.contains(#""level":"error""#), "\(server.output)")
        }
    }

    /// A chat whose first attempt fails at the model: its retry is a second span of the same trace, under the same
    /// producer span, the failed one marked as an error. Without `TRACE_STATEMENTS` no statement has a span.
    @Test(.timeLimit(.minutes(2)))
    func aRetriedJobIsANewSpanOfTheSameTrace() async throws {
        let receiver = try await OTLPReceiver.start()
        defer { receiver.stop() }
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        model.script([.error(status: 500, type: "server_error", code: nil, message: "The server had an error")])
        try await Self.withSystem(model: model, tracing: receiver.environment(service: "carbscan-api")) { api, _, _, _ in
            let token = try await Self.signUp(api)
            let app = Self.appContext()
            let (status, _) = try await api.call(
                "POST", "chat", token: token, json: #"{"message":"Carbs in rice?"}"#,
                headers: ["traceparent": app.header, "Prefer": "respond-async"])
            #expect(status == 202)
            let runs = try await receiver.waitForSpans(timeout: .seconds(30)) { spans in
                spans.filter { $0.traceID == app.traceID && $0.kind == .consumer }.count == 2
            }.filter { $0.traceID == app.traceID && $0.kind == .consumer }.sorted { $0.startNanoseconds < $1.startNanoseconds }
            let send = try #require(try receiver.spans(inTrace: app.traceID).first { $0.kind == .producer })
            #expect(runs.map(\.parentSpanID) == [send.spanID, send.spanID])
            #expect(runs.map { $0.attributes["carbscan.job.attempt"]?.int } == [1, 2])
            #expect(runs.map(\.status) == [.error, .unset])
            #expect(Set(runs.map(\.spanID)).count == 2)
            // Statements and scripts get no spans of their own unless asked for (`TRACE_STATEMENTS`).
            let trace = try receiver.spans(inTrace: app.traceID)
            #expect(!trace.contains { $0.attributes["db.system.name"] != nil }, "\(trace)")
            #expect(trace.contains { $0.kind == .client && $0.service == "carbscan-worker" }, "\(trace)")
        }
    }

    /// A request whose app did not sample its trace (`traceparent` flags 00; the samplers are parent-based): no span
    /// is exported, in either process, yet the context travels through the job to the model, still unsampled.
    @Test(.timeLimit(.minutes(2)))
    func aTraceTheAppDidNotSampleOnlyTravels() async throws {
        let receiver = try await OTLPReceiver.start()
        defer { receiver.stop() }
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        let parentBased = receiver.environment(service: "carbscan-api").merging(["OTEL_TRACES_SAMPLER": "parentbased_always_on"]) { $1 }
        try await Self.withSystem(model: model, tracing: parentBased) { api, _, _, _ in
            let token = try await Self.signUp(api)
            let app = Self.appContext()
            let unsampled = String(app.header.dropLast(2)) + "00"
            let (status, _) = try await api.call(
                "POST", "chat", token: token, json: #"{"message":"Carbs in rice?"}"#, headers: ["traceparent": unsampled])
            #expect(status == 200)
            let sent = try #require(model.received.last?.traceparent, "the model got no traceparent")
            let parts = sent.split(separator: "-").map(String.init)
            #expect(parts.count == 4 && parts[1] == app.traceID && parts[3] == "00", "\(sent)")
            // The sign-up's trace (sampled, started here) arrives; the chat's never does.
            try await receiver.waitForSpans { spans in spans.contains { $0.attributes["http.route"] == "/api/mobile/v1/auth/register" } }
            try await Task.sleep(for: .milliseconds(500))
            #expect(try receiver.spans(inTrace: app.traceID).isEmpty)
        }
    }

    /// A trace dropped where it starts (`parentbased_always_off`: no new trace is sampled) makes no span anywhere, yet
    /// its context travels as a sampled one would: through the job's record to the worker, and to the model, flags 00,
    /// the worker's lines naming its trace. An app's sampled trace is still followed, in both processes.
    @Test(.timeLimit(.minutes(2)))
    func aTraceDroppedWhereItStartsOnlyTravels() async throws {
        let receiver = try await OTLPReceiver.start()
        defer { receiver.stop() }
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        let rootsOff = receiver.environment(service: "carbscan-api").merging(["OTEL_TRACES_SAMPLER": "parentbased_always_off"]) { $1 }
        try await Self.withSystem(model: model, tracing: rootsOff) { api, _, worker, _ in
            let token = try await Self.signUp(api)
            let (status, _) = try await api.call("POST", "chat", token: token, json: #"{"message":"Carbs in rice?"}"#)
            #expect(status == 200)
            let sent = try #require(model.received.last?.traceparent, "the model got no traceparent")
            let parts = sent.split(separator: "-").map(String.init)
            #expect(parts.count == 4 && parts[0] == "00" && parts[1].count == 32 && parts[3] == "00", "\(sent)")
            #expect(
                worker.output.split(separator: "\n").contains {
                    $0.contains("job succeeded") && $0.contains(#""trace_flags":"0","trace_id":"\#(parts[1])""#)
                        && !$0.contains("span_id")
                },
                "\(worker.output)")

            let app = Self.appContext()
            let (followed, _) = try await api.call(
                "POST", "chat", token: token, json: #"{"message":"Carbs in bread?"}"#, headers: ["traceparent": app.header])
            #expect(followed == 200)
            let spans = try await receiver.waitForSpans { spans in
                Set(spans.filter { $0.traceID == app.traceID }.compactMap(\.service)) == ["carbscan-api", "carbscan-worker"]
            }
            // Nothing of the dropped traces (the sign-up's, the first chat's) was exported.
            #expect(spans.allSatisfy { $0.traceID == app.traceID }, "\(spans)")
        }
    }

    /// `OTEL_PROPAGATORS=none`: no context leaves a process, a dropped trace's neither (it went to the job's record and
    /// on to the model until 2026-11-29), and the app's `traceparent` is not continued.
    @Test(.timeLimit(.minutes(2)))
    func withPropagatorsNoneNoContextLeavesAProcess() async throws {
        let receiver = try await OTLPReceiver.start()
        defer { receiver.stop() }
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        let settings = ["OTEL_PROPAGATORS": "none", "OTEL_TRACES_SAMPLER": "always_off"]
        let tracing = receiver.environment(service: "carbscan-api").merging(settings) { $1 }
        try await Self.withSystem(model: model, tracing: tracing) { api, _, worker, queue in
            let token = try await Self.signUp(api)
            let app = Self.appContext()
            let (status, _) = try await api.call(
                "POST", "chat", token: token, json: #"{"message":"Carbs in rice?"}"#, headers: ["traceparent": app.header])
            #expect(status == 200)
            #expect(model.received.count == 1 && model.received[0].traceparent == nil, "\(model.received)")
            // The worker still names the trace its job's run was in: one of its own, not the app's.
            #expect(worker.output.contains(#""trace_id":"#) && !worker.output.contains(app.traceID), "\(worker.output)")
            let carried = try await Self.carriedContexts(prefix: queue.options.prefix, redis: queue.redis)
            #expect(carried.count == 1 && carried[0] == nil, "\(carried)")
        }
    }

    /// The trace context (`tp`) each job record under `prefix` carries.
    static func carriedContexts(prefix: String, redis: RedisClient) async throws -> [String?] {
        var contexts: [String?] = []
        try await redis.forEachKeyBatch(matching: "\(prefix):*job:*") { keys in
            // Records only: a job's event log (a stream) matches the pattern too.
            for key in keys where try await redis.send(["TYPE", key]).string == "hash" {
                contexts.append(try await redis.send(["HGET", key, "tp"]).string)
            }
        }
        return contexts
    }

    /// Without an endpoint nothing is traced: no context travels to the model, and the job's record names no trace.
    @Test(.timeLimit(.minutes(2)))
    func withoutAnEndpointNothingIsTracedOrSent() async throws {
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        try await Self.withSystem(model: model, tracing: [:]) { api, _, worker, _ in
            let token = try await Self.signUp(api)
            let (status, _) = try await api.call(
                "POST", "chat", token: token, json: #"{"message":"Carbs in rice?"}"#, headers: ["traceparent": Self.appContext().header])
            #expect(status == 200)
            #expect(model.received.count == 1 && model.received[0].traceparent == nil)
            #expect(!worker.output.contains("trace_id"))
        }
    }

    /// The ids of `span`'s ancestors in `spans`, nearest first.
    static func ancestors(of span: OTLPReceiver.Span, in spans: [OTLPReceiver.Span]) -> [String] {
        var ids: [String] = []
        var parent = span.parentSpanID
        while !parent.isEmpty, !ids.contains(parent) {
            ids.append(parent)
            parent = spans.first { $0.spanID == parent }?.parentSpanID ?? ""
        }
        return ids
    }
}
