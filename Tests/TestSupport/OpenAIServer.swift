import Foundation
import Hummingbird
import JSON
import Synchronization

/// A local server speaking OpenAI's chat completions API (`POST /v1/chat/completions`, and `GET /v1/models`),
/// answering from a script: a JSON answer in a completion, OpenAI's error shape with a status (and `Retry-After`), a
/// malformed or truncated body, or a slow answer. It records every request it got. With `LlamaCpp` it also behaves
/// as llama.cpp's `llama-server` does: no default output limit (a request without `max_tokens` generates until the
/// context is full and ends with `finish_reason: length`), a text-only model refusing an image part with a 500, and
/// `GET /props` reporting the model's modalities.
///
/// A request with `"stream": true` gets the answer as OpenAI streams it (``Streaming``): `text/event-stream`, one
/// `data: {chat.completion.chunk}` event per piece of the content (the first carrying the role), a last chunk with
/// an empty delta and the finish reason, a usage chunk when `stream_options.include_usage` asks, then
/// `data: [DONE]`. Errors are answered before any chunk, as JSON with their status, as OpenAI does.
public final class OpenAIServer: Sendable {
    /// What the server does with `"stream": true`.
    public enum Streaming: Sendable {
        /// Streams: the content in pieces of `pieceSize` characters, `pause` apart; with `holdLast`, the last piece
        /// waits until the gate is opened (so a test can see what arrived before the answer ended).
        case supported(pieceSize: Int = 3, pause: Duration = .zero, holdLast: Gate? = nil)
        /// Refuses it the way OpenAI refuses a parameter it does not take: 400, `invalid_request_error`, `param:
        /// "stream"`. Requests without it are answered.
        case refused
        /// Ignores it and answers with a whole `application/json` completion: an old server, a buffering proxy.
        case ignored
    }

    /// Holds a streamed answer before its last piece until opened.
    public final class Gate: Sendable {
        private let state = Mutex((reached: false, open: false))

        public init() {}

        /// Whether the answer has reached the gate (everything before its last piece sent).
        public var reached: Bool { state.withLock { $0.reached } }

        public func open() { state.withLock { $0.open = true } }

        fileprivate func pass() async throws {
            state.withLock { $0.reached = true }
            // Bounded, so a test that fails before opening it cannot hang the server.
            for _ in 0..<3000 where !state.withLock({ $0.open }) { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    /// llama-server's behaviour, as observed with a small real model.
    public struct LlamaCpp: Sendable {
        /// A model loaded without a multimodal projector: image parts are refused.
        public var vision: Bool
        /// The model file name it reports as its id.
        public var model: String

        public init(vision: Bool, model: String = "qwen2.5-0.5b-instruct-q4_k_m.gguf") {
            self.vision = vision
            self.model = model
        }
    }

    public indirect enum Reply: Sendable {
        /// A completion whose message content is this text (the model's JSON answer).
        case content(String, finishReason: String = "stop")
        /// OpenAI's error body `{"error": {"message", "type", "code"}}` with this status.
        case error(status: Int, type: String, code: String?, message: String, retryAfter: Int? = nil, param: String? = nil)
        /// This body verbatim, status 200.
        case raw(String)
        /// This body verbatim as `text/event-stream`, status 200.
        case eventStream(String)
        /// Waits, then answers with the reply.
        case slow(Duration, Reply)
        /// Streamed, the content's pieces and then the connection closed: no last chunk, no `[DONE]`. Unstreamed,
        /// half the completion, then the connection closed.
        case brokenStream(String)

        public static func json(_ value: JSONValue) -> Reply { .content(value.jsonString) }
    }

    public struct Received: Sendable {
        public var authorization: String?
        public var body: String
        public var at = ContinuousClock.now
        /// The W3C trace context the caller sent, if it traces.
        public var traceparent: String? = nil
    }

    public let port: Int
    private let server: LocalServer
    private let state: ServerState

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var received: [Received] { state.storage.withLock { $0.received } }

    /// Queues replies; when the script runs out, `fallback` answers.
    public func script(_ replies: [Reply]) { state.storage.withLock { $0.script += replies } }

    private init(port: Int, server: LocalServer, state: ServerState) {
        self.port = port
        self.server = server
        self.state = state
    }

    public static func start(fallback: Reply, llamaCpp: LlamaCpp? = nil, streaming: Streaming = .supported()) async throws
        -> OpenAIServer
    {
        let state = ServerState(fallback: fallback)
        let router = Router()
        router.post("v1/chat/completions") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 32 << 20)
            let text = String(buffer: body)
            let received = Received(
                authorization: request.headers[.authorization], body: text,
                traceparent: request.headers.first { $0.name.canonicalName == "traceparent" }?.value)
            let fields = try? JSONValue(parsing: text)
            var stream: Stream?
            if fields?["stream"] == true {
                switch streaming {
                case .supported(let pieceSize, let pause, let holdLast):
                    stream = Stream(
                        pieceSize: pieceSize, pause: pause, holdLast: holdLast,
                        includeUsage: fields?["stream_options"]?["include_usage"] == true)
                case .refused:
                    state.record(received)
                    return try await Self.respond(
                        .error(
                            status: 400, type: "invalid_request_error", code: nil, message: "stream is not supported", param: "stream"),
                        stream: nil)
                case .ignored:
                    break
                }
            }
            let reply = state.next(received)
            if let llamaCpp, let refusal = Self.llamaCppRefusal(text, llamaCpp) { return try await Self.respond(refusal, stream: stream) }
            return try await Self.respond(reply, stream: stream)
        }
        router.get("v1/models") { _, _ -> Response in
            let id = llamaCpp?.model ?? "gpt-4o-mini"
            let owner = llamaCpp == nil ? "openai" : "llamacpp"
            let list: [String: Any] = [
                "object": "list", "data": [["id": id, "object": "model", "created": 1_700_000_000, "owned_by": owner]],
            ]
            return json(200, try JSONSerialization.data(withJSONObject: list))
        }
        if let llamaCpp {
            router.get("props") { _, _ -> Response in
                let props: [String: Any] = [
                    "model_path": "/models/\(llamaCpp.model)", "modalities": ["vision": llamaCpp.vision, "audio": false],
                    "default_generation_settings": ["n_ctx": 4096, "params": ["n_predict": -1]],
                ]
                return json(200, try JSONSerialization.data(withJSONObject: props))
            }
        }
        let server = try await LocalServer.start(router, name: "openai")
        return OpenAIServer(port: server.port, server: server, state: state)
    }

    /// What llama-server does before the script gets a say: refuse an image part without vision (its exact 500), and
    /// run a request without `max_tokens` to the context's end (`n_predict: -1`), cutting the JSON off.
    private static func llamaCppRefusal(_ body: String, _ llamaCpp: LlamaCpp) -> Reply? {
        guard let request = try? JSONValue(parsing: body) else { return nil }
        if !llamaCpp.vision, body.contains("\"image_url\"") {
            return .error(
                status: 500, type: "server_error", code: nil,
                message: "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj")
        }
        if request["max_tokens"] == nil && request["max_completion_tokens"] == nil {
            return .content(#"{"response": "Carbohydrates are sugars, starches and fibre. The"#, finishReason: "length")
        }
        return nil
    }

    public func stop() { server.stop() }

    /// How a streamed answer is sent.
    private struct Stream {
        var pieceSize: Int
        var pause: Duration
        var holdLast: Gate?
        var includeUsage: Bool
    }

    private static func respond(_ reply: Reply, stream: Stream?) async throws -> Response {
        switch reply {
        case .content(let content, let finishReason) where stream != nil:
            return streamed(content, finishReason: finishReason, stream!, broken: false)
        case .brokenStream(let content):
            guard let stream else {
                let whole = try completion(content, finishReason: "stop")
                return Response(
                    status: .ok, headers: [.contentType: "application/json", .contentLength: String(whole.count)],
                    body: ResponseBody { writer in
                        try await writer.write(ByteBuffer(bytes: whole.prefix(whole.count / 2)))
                        throw ServerError("connection closed mid-answer")
                    })
            }
            return streamed(content, finishReason: nil, stream, broken: true)
        case .content(let content, let finishReason):
            return json(200, try completion(content, finishReason: finishReason))
        case .error(let status, let type, let code, let message, let retryAfter, let param):
            var error: [String: Any] = ["message": message, "type": type, "param": param ?? NSNull()]
            error["code"] = code ?? NSNull()
            var response = json(status, try JSONSerialization.data(withJSONObject: ["error": error]))
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        case .raw(let text):
            return json(200, Data(text.utf8))
        case .eventStream(let text):
            return Response(
                status: .ok, headers: [.contentType: "text/event-stream; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
        case .slow(let delay, let then):
            try await Task.sleep(for: delay)
            return try await respond(then, stream: stream)
        }
    }

    private static func completion(_ content: String, finishReason: String) throws -> Data {
        let completion: [String: Any] = [
            "id": "chatcmpl-test", "object": "chat.completion", "created": 1_700_000_000, "model": "gpt-4o-mini",
            "choices": [["index": 0, "message": ["role": "assistant", "content": content], "finish_reason": finishReason]],
            "usage": ["prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20],
        ]
        return try JSONSerialization.data(withJSONObject: completion)
    }

    /// OpenAI's stream of `chat.completion.chunk`s for `content`; `broken`: the connection closes after the last
    /// piece, before the finishing chunk and `[DONE]`.
    private static func streamed(_ content: String, finishReason: String?, _ stream: Stream, broken: Bool) -> Response {
        var split: [String] = []
        var rest = Substring(content)
        while !rest.isEmpty {
            split.append(String(rest.prefix(max(1, stream.pieceSize))))
            rest = rest.dropFirst(max(1, stream.pieceSize))
        }
        let pieces = split
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                func send(_ delta: [String: Any], finishReason: String? = nil) async throws {
                    var chunk: [String: Any] = [
                        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "gpt-4o-mini",
                        "system_fingerprint": "fp_test",
                        "choices": [
                            ["index": 0, "delta": delta, "logprobs": NSNull(), "finish_reason": finishReason.map { $0 as Any } ?? NSNull()]
                        ],
                    ]
                    if stream.includeUsage { chunk["usage"] = NSNull() }
                    try await event(try JSONSerialization.data(withJSONObject: chunk))
                }
                func event(_ data: Data) async throws {
                    try await writer.write(ByteBuffer(bytes: Array("data: ".utf8) + data + Array("\n\n".utf8)))
                }
                try await send(["role": "assistant", "content": "", "refusal": NSNull()])
                for (index, piece) in pieces.enumerated() {
                    if index == pieces.count - 1, let gate = stream.holdLast { try await gate.pass() }
                    try await send(["content": piece])
                    if stream.pause > .zero { try await Task.sleep(for: stream.pause) }
                }
                if broken { throw ServerError("connection closed mid-stream") }
                try await send([:], finishReason: finishReason)
                if stream.includeUsage {
                    let usage: [String: Any] = [
                        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "gpt-4o-mini",
                        "choices": [] as [Any], "usage": ["prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20],
                    ]
                    try await event(try JSONSerialization.data(withJSONObject: usage))
                }
                try await writer.write(ByteBuffer(string: "data: [DONE]\n\n"))
                try await writer.finish(nil)
            })
    }

    private static func json(_ status: Int, _ data: Data) -> Response {
        Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

private final class ServerState: Sendable {
    struct Storage {
        var script: [OpenAIServer.Reply] = []
        var received: [OpenAIServer.Received] = []
    }
    let storage = Mutex(Storage())
    let fallback: OpenAIServer.Reply

    init(fallback: OpenAIServer.Reply) { self.fallback = fallback }

    func record(_ received: OpenAIServer.Received) { storage.withLock { $0.received.append(received) } }

    func next(_ received: OpenAIServer.Received) -> OpenAIServer.Reply {
        storage.withLock { storage in
            storage.received.append(received)
            return storage.script.isEmpty ? fallback : storage.script.removeFirst()
        }
    }
}

public struct ServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
