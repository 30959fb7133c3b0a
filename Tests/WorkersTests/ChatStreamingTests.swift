import Foundation
import JSON
import Queue
import Store
import Synchronization
import TestSupport
import Testing

@testable import Workers

/// The chat answer streamed to the job's followers (issue 30 §2), against a local server streaming as OpenAI does,
/// and the servers that cannot: one refusing `stream`, one ignoring it, one whose stream breaks.
@Suite struct ChatStreamingTests {
    /// The events a handler published, in order.
    final class Recorder: Sendable {
        private let events = Mutex<[(type: String, fields: [(String, String)])]>([])

        var deltas: [String] {
            events.withLock { $0.filter { $0.type == "delta" }.compactMap { $0.fields.first { $0.0 == "text" }?.1 } }
        }

        var jobEvents: JobEvents {
            JobEvents { type, fields in self.events.withLock { $0.append((type, fields)) } }
        }
    }

    /// The model's answer: `response` with escapes, a surrogate pair and a leading space (which the stored answer
    /// loses to `tidy`), long enough to come in many pieces.
    static let response = #" Cooked white rice has about 28 g of carbohydrates per 100 g ("one cup" ≈ 45 g).\nBrown rice: 23 g 🍚"#
    static let answer: JSONValue = [
        "response": .string(response), "messageType": "carb_lookup",
        "followUpQuestions": ["What about brown rice?", "How much is a cup?"],
    ]

    func settings(_ server: OpenAIServer) -> WorkerSettings {
        WorkerSettings(aiBaseURL: server.baseURL, aiAPIKey: "sk-test", aiModel: "gpt-4o-mini")
    }

    func chat(_ env: WorkerTestEnvironment, _ server: OpenAIServer, _ recorder: Recorder?) async throws -> (JSONValue, String) {
        let user = try await env.createUser()
        let handler = try #require(Handlers.registry(services: env.services(settings(server))).handler(for: "chat"))
        let payload: JSONValue = ["userId": .string(user.id), "messageId": .string(UUID().uuidString.lowercased()), "message": "Rice?"]
        let context = JobContext(id: .random(), kind: "chat", attempt: 1, maxAttempts: 3, events: recorder?.jobEvents ?? .discarding)
        let result = try JSONValue(parsing: try #require(try await handler(payload.jsonString, context)))
        return (result, user.id)
    }

    func stored(_ env: WorkerTestEnvironment, _ userID: String) async throws -> [String] {
        try await env.database.query("SELECT response FROM chat_messages WHERE user_id = $1", [userID]).map { try $0.decode("response") }
    }

    func streamed(_ received: OpenAIServer.Received) throws -> Bool {
        try JSONValue(parsing: received.body)["stream"] == true
    }

    /// The peer sends the answer three characters at a time and holds its last piece until the test has seen a
    /// delta: the text reaches the followers while the model is still writing, in order, and adds up to the
    /// model's `response` exactly; what is stored is that, tidied.
    @Test func theAnswerIsPublishedWhileTheModelWritesIt() async throws {
        let gate = OpenAIServer.Gate()
        let server = try await OpenAIServer.start(
            fallback: .json(Self.answer), streaming: .supported(pieceSize: 3, pause: .milliseconds(2), holdLast: gate))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let recorder = Recorder()
            let job = Task { try await chat(env, server, recorder) }
            #expect(try await eventually { gate.reached })
            #expect(!recorder.deltas.isEmpty, "nothing was published before the answer's last piece")
            let before = recorder.deltas.joined()
            #expect(Self.response.hasPrefix(before))
            gate.open()
            let (result, userID) = try await job.value
            let text = recorder.deltas.joined()
            #expect(text == Self.response)
            #expect(result["response"] == .string(Self.response.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(try await stored(env, userID) == [Self.response.trimmingCharacters(in: .whitespacesAndNewlines)])
            #expect(result["messageType"] == "carb_lookup")
            #expect(try server.received.map(streamed) == [true])
        }
    }

    /// With nobody recording the job's events the call stays the one-shot one.
    @Test func unrecordedTheModelIsAskedWithoutStreaming() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let (result, _) = try await chat(env, server, nil)
            #expect(result["messageType"] == "carb_lookup")
            #expect(try server.received.map(streamed) == [false])
        }
    }

    /// OpenAI-style 400 naming `stream`: the same attempt asks again without it, the answer is published as one
    /// delta, and later jobs ask that server unstreamed straight away.
    @Test func aServerRefusingStreamIsAskedUnstreamedAndRemembered() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.answer), streaming: .refused)
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let recorder = Recorder()
            let (result, userID) = try await chat(env, server, recorder)
            #expect(result["messageType"] == "carb_lookup")
            #expect(recorder.deltas == [Self.response])
            #expect(try await stored(env, userID).count == 1)
            #expect(try server.received.map(streamed) == [true, false])
            let again = Recorder()
            _ = try await chat(env, server, again)
            #expect(try server.received.map(streamed) == [true, false, false])
            #expect(again.deltas == [Self.response])
        }
    }

    /// A 400 that the unstreamed request gets too is the request's fault, not the stream's: the job fails as it
    /// always did, and the server is not marked as one that cannot stream.
    @Test func aRequestRefusedEitherWayFailsAndStreamingIsNotGivenUp() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { server.stop() }
        let tooLong = OpenAIServer.Reply.error(
            status: 400, type: "invalid_request_error", code: "context_length_exceeded", message: "too many tokens")
        server.script([tooLong, tooLong])
        try await WorkerTestEnvironment.run { env in
            do {
                _ = try await chat(env, server, Recorder())
                Issue.record("a refused request succeeded")
            } catch let failure as JobFailure {
                #expect(failure.kind == .permanent)
                #expect(failure.message.contains("context_length_exceeded"))
            }
            _ = try await chat(env, server, Recorder())
            #expect(try server.received.map(streamed) == [true, false, true])
        }
    }

    /// A server that ignores `stream` (or a proxy that buffers) answers with one whole completion: parsed as such,
    /// published as one delta.
    @Test func aWholeJSONAnswerToAStreamedRequestIsTakenWhole() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.answer), streaming: .ignored)
        defer { server.stop() }
        try await WorkerTestEnvironment.run { env in
            let recorder = Recorder()
            let (result, userID) = try await chat(env, server, recorder)
            #expect(result["messageType"] == "carb_lookup")
            #expect(recorder.deltas == [Self.response])
            #expect(try await stored(env, userID).count == 1)
            #expect(try server.received.map(streamed) == [true])
        }
    }

    /// The connection closes after the last piece, before the finishing chunk and `[DONE]`: the attempt fails to
    /// be tried again, and nothing is stored (so nothing is charged).
    @Test func aBrokenStreamIsARetryableFailureAndNothingIsStored() async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { server.stop() }
        server.script([.brokenStream(Self.answer.jsonString)])
        try await WorkerTestEnvironment.run { env in
            let user = try await env.createUser()
            let handler = try #require(Handlers.registry(services: env.services(settings(server))).handler(for: "chat"))
            let payload: JSONValue = ["userId": .string(user.id), "messageId": .string(UUID().uuidString.lowercased()), "message": "Rice?"]
            let recorder = Recorder()
            do {
                _ = try await handler(
                    payload.jsonString, JobContext(id: .random(), kind: "chat", attempt: 1, maxAttempts: 3, events: recorder.jobEvents))
                Issue.record("a broken stream was taken for an answer")
            } catch let failure as JobFailure {
                #expect(failure.kind == .retryable)
                #expect(failure.message.contains("AI request failed"))
            }
            #expect(try await stored(env, user.id).isEmpty)
            #expect(try server.received.map(streamed) == [true])
        }
    }

    /// A chunk whose delta is the whole answer, finishing nothing.
    static let wholeAnswerChunk: String = {
        let chunk: JSONValue = ["choices": [["index": 0, "delta": ["content": .string(answer.jsonString)], "finish_reason": nil]]]
        return "data: " + chunk.jsonString + "\n\n"
    }()

    /// Streamed answers that are not whole: cut off at the length limit; the whole JSON but the stream ended cleanly
    /// without a finish reason or `[DONE]`; failed by the provider mid-answer (OpenAI's error event). Each fails the
    /// attempt, retryable, saying why.
    @Test(arguments: [
        (
            OpenAIServer.Reply.content(#"{"response":"Rice has","messageType":"general","followUpQuestions":[]"#, finishReason: "length"),
            "cut off at the length limit"
        ),
        (.eventStream(wholeAnswerChunk), "stream ended before the answer did"),
        (
            .eventStream(
                wholeAnswerChunk
                    + #"data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#
                    + "\n\n"),
            "server_error: The server had an error"
        ),
    ])
    func anUnfinishedStreamIsRetryable(_ reply: OpenAIServer.Reply, reason: String) async throws {
        let server = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { server.stop() }
        server.script([reply])
        try await WorkerTestEnvironment.run { env in
            do {
                _ = try await chat(env, server, Recorder())
                Issue.record("an unfinished stream was taken for an answer")
            } catch let failure as JobFailure {
                #expect(failure.kind == .retryable)
                #expect(failure.message.contains(reason), "\(failure.message)")
            }
            #expect(try server.received.map(streamed) == [true])
        }
    }
}
