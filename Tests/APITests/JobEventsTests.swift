import Foundation
import HTTPTypes
import JSON
import Queue
import TestSupport
import Testing
import Workers

/// `jobs/{id}/events`: a job's server-sent events, end to end (a live API, a worker in this process, a local model,
/// `curl -N` as the client).
@Suite struct JobEventsTests {
    static func url(_ client: some Any, _ port: Int?, _ path: String) -> String {
        "http://127.0.0.1:\(port ?? 0)/api/mobile/v1/\(path)"
    }

    /// A chat accepted with 202, then followed: its states in order, each with an increasing id, the last one the
    /// job as `jobs/{id}` answers it with the answer; the stream then ends by itself, and the owner's end is marked seen.
    @Test func aFollowedChatStreamsItsStatesAndEndsWithTheAnswer() async throws {
        let model = try await OpenAIServer.start(fallback: .json(ChatRoutesTests.answer))
        defer { model.stop() }
        try await TestAPI.run(live: true) { api, client in
            let account = try await api.register(client)
            let accepted = try await client.call(
                .post, "chat", token: account.accessToken, json: ["message": "Carbs in rice?"], headers: [.init("Prefer")!: "respond-async"]
            )
            let jobID = try #require(accepted.data["jobId"].string)
            let stream = try EventStreamClient(Self.url(client, client.port, "jobs/\(jobID)/events"), token: account.accessToken)
            defer { stream.stop() }
            #expect(try await eventually { stream.events.map(\.name) == ["queued"] })
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            #expect(try await stream.waitForEnd())
            worker.stop()
            try await task.value
            let events = stream.events
            let states = events.map(\.name).filter { $0 != "delta" }
            #expect(states == ["queued", "running", "succeeded"], "\(stream.text)")
            #expect(stream.statusLine?.hasPrefix("200 text/event-stream") == true, "\(stream.statusLine ?? "")")
            let ids = events.compactMap(\.id)
            #expect(ids.count == events.count && ids == ids.sorted { Self.order($0, $1) })
            let running = JSON(parsing: events[1].data)
            #expect(running["status"].string == "running" && running["attempts"].int == 1 && running["result"].exists == false)
            // The answer as the model wrote it: the deltas, in order, between running and the end.
            let deltas = events.filter { $0.name == "delta" }
            #expect(!deltas.isEmpty && events[2..<(events.count - 1)].allSatisfy { $0.name == "delta" })
            #expect(
                deltas.map { JSON(parsing: $0.data)["text"].string ?? "" }.joined() == "A medium banana has about 27 g of carbohydrates.")
            let last = JSON(parsing: try #require(events.last).data)
            #expect(last["id"].string == jobID && last["status"].string == "succeeded")
            #expect(last["result"]["response"].string == "A medium banana has about 27 g of carbohydrates.")
            #expect(last["result"]["usage"]["totalUsedToday"].int == 1)
            let id = try #require(JobID(rawValue: jobID))
            let record = try #require(try await api.queue.record(id))
            #expect(try await ResultSeen(redis: api.queue.redis, prefix: api.queue.options.prefix).isMarked(record.id, queue: record.queue))
        }
    }

    /// A client that reconnects with `Last-Event-ID` gets exactly the events after it; a finished job's stream replays
    /// and ends. An id that is not one of ours is a 400; someone else's job, or none, is the same 404.
    @Test func lastEventIDResumesExactlyAfterItAndStrangersGetNothing() async throws {
        let model = try await OpenAIServer.start(fallback: .json(ChatRoutesTests.answer))
        defer { model.stop() }
        try await TestAPI.run(live: true) { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let accepted = try await client.call(
                .post, "chat", token: account.accessToken, json: ["message": "Carbs in rice?"], headers: [.init("Prefer")!: "respond-async"]
            )
            let jobID = try #require(accepted.data["jobId"].string)
            let answered = try await client.call(.get, "jobs/\(jobID)?wait=15", token: account.accessToken)
            worker.stop()
            try await task.value
            #expect(answered.data["status"].string == "succeeded")
            let url = Self.url(client, client.port, "jobs/\(jobID)/events")
            let whole = try EventStreamClient(url, token: account.accessToken)
            #expect(try await whole.waitForEnd())
            #expect(whole.events.map(\.name).filter { $0 != "delta" } == ["queued", "running", "succeeded"])
            for (index, event) in whole.events.enumerated() {
                let eventID = try #require(event.id)
                let resumed = try EventStreamClient(url, token: account.accessToken, headers: ["Last-Event-ID": eventID])
                #expect(try await resumed.waitForEnd())
                #expect(resumed.events == Array(whole.events.dropFirst(index + 1)), "after \(event.name)")
            }

            // An id past the job's last event: nothing more will come, and the stream ends at once.
            let past = try EventStreamClient(url, token: account.accessToken, headers: ["Last-Event-ID": "99999999999999-0"])
            #expect(try await past.waitForEnd(timeout: .seconds(5)))
            #expect(past.events.isEmpty, "\(past.text)")

            let bad = try await client.call(
                .get, "jobs/\(jobID)/events", token: account.accessToken, headers: [.init("Last-Event-ID")!: "x"])
            #expect(bad.status == 400 && bad.errorCode == "VALIDATION_ERROR", "\(bad.text)")
            let stranger = try await api.register(client, email: "stranger@example.com")
            let theirs = try await client.call(.get, "jobs/\(jobID)/events", token: stranger.accessToken)
            let none = try await client.call(.get, "jobs/\(UUID().uuidString.lowercased())/events", token: stranger.accessToken)
            #expect(theirs.status == 404 && none.status == 404 && theirs.text.count > 0 && theirs.errorCode == none.errorCode)
        }
    }

    /// `POST chat` with `Accept: text/event-stream` answers with the job's stream in the same request; the JSON answer
    /// stays the default.
    @Test func aChatAskedForAnEventStreamAnswersWithIt() async throws {
        let model = try await OpenAIServer.start(fallback: .json(ChatRoutesTests.answer))
        defer { model.stop() }
        try await TestAPI.run(live: true) { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let stream = try EventStreamClient(
                Self.url(client, client.port, "chat"), token: account.accessToken, headers: ["Accept": "text/event-stream"], method: "POST",
                body: #"{"message":"Carbs in a banana?"}"#)
            #expect(try await stream.waitForEnd())
            worker.stop()
            try await task.value
            #expect(stream.events.map(\.name).filter { $0 != "delta" } == ["queued", "running", "succeeded"], "\(stream.text)")
            #expect(JSON(parsing: try #require(stream.events.last).data)["result"]["messageType"].string == "carb_lookup")
            #expect(stream.statusLine?.hasPrefix("200 text/event-stream") == true)
        }
    }

    /// A chat streams its answer only for a client that can read it: one that follows the job as it starts, or one whose
    /// `Accept` lists `text/event-stream` (the generated client's does). Nobody following, the model is asked once,
    /// unstreamed (a streamed answer costs the worker 4× the CPU), and the log holds no deltas.
    @Test func aChatStreamsOnlyForAClientThatCanReadIt() async throws {
        let model = try await OpenAIServer.start(fallback: .json(ChatRoutesTests.answer))
        defer { model.stop() }
        try await TestAPI.run(live: true) { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let plain = try await client.call(.post, "chat", token: account.accessToken, json: ["message": "Carbs in rice?"])
            #expect(plain.status == 200)
            let readsStreams = try await client.call(
                .post, "chat", token: account.accessToken, json: ["message": "And pasta?"],
                headers: [.accept: "application/json, text/event-stream"])
            #expect(readsStreams.status == 200 && readsStreams.data["response"].string != nil, "\(readsStreams.text)")
            worker.stop()
            try await task.value
            let asked = model.received.map { JSON(parsing: $0.body)["stream"].bool }
            #expect(asked == [nil, true], "\(asked)")
        }
    }

    /// An analysis says where it is: its progress events come between running and the end, in order.
    @Test func anAnalysisStreamsItsProgress() async throws {
        let model = try await OpenAIServer.start(fallback: .json(AnalyzeRoutesTests.estimate))
        defer { model.stop() }
        try await TestAPI.run(live: true) { api, client in
            let account = try await api.register(client)
            let accepted = try await client.call(
                .post, "analyze", token: account.accessToken, json: ["imageBase64": Data(AnalyzeRoutesTests.jpeg).base64EncodedString()],
                headers: [.init("Prefer")!: "respond-async"])
            let jobID = try #require(accepted.data["jobId"].string)
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let stream = try EventStreamClient(Self.url(client, client.port, "jobs/\(jobID)/events"), token: account.accessToken)
            #expect(try await stream.waitForEnd())
            worker.stop()
            try await task.value
            #expect(stream.events.map(\.name) == ["queued", "running", "progress", "progress", "progress", "succeeded"], "\(stream.text)")
            #expect(
                stream.events.filter { $0.name == "progress" }.map { JSON(parsing: $0.data)["step"].string ?? "" } == [
                    "image_received", "model_asked", "answer_parsed",
                ])
            #expect(JSON(parsing: try #require(stream.events.last).data)["result"]["analysis"]["carbEstimate"].double == 45)
        }
    }

    /// An idle stream sends heartbeat comments, and a job without an event log (a kind without `events: true`) is
    /// followed by its record: its state, then its end.
    @Test func anIdleStreamBeatsAndAKindWithoutALogIsFollowedByItsRecord() async throws {
        try await TestAPI.run(environment: ["EVENT_STREAM_HEARTBEAT_SECONDS": "0.2"], live: true) { api, client in
            let account = try await api.register(client)
            let id = try #require(try await api.queue.enqueue("noop", payload: [:], options: .init(owner: account.id)).id)
            let stream = try EventStreamClient(Self.url(client, client.port, "jobs/\(id.rawValue)/events"), token: account.accessToken)
            defer { stream.stop() }
            #expect(try await eventually { stream.comments.count >= 3 })
            #expect(stream.events.map(\.name) == ["queued"] && stream.events[0].id == nil)
            _ = try await api.queue.cancel(id)
            #expect(try await stream.waitForEnd())
            #expect(stream.events.map(\.name) == ["queued", "cancelled"], "\(stream.text)")
        }
    }

    static func order(_ a: String, _ b: String) -> Bool {
        let x = a.split(separator: "-").compactMap { Int($0) }
        let y = b.split(separator: "-").compactMap { Int($0) }
        return x[0] != y[0] ? x[0] < y[0] : x[1] < y[1]
    }
}
