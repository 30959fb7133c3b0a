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
public final class OpenAIServer: Sendable {
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
        case error(status: Int, type: String, code: String?, message: String, retryAfter: Int? = nil)
        /// This body verbatim, status 200.
        case raw(String)
        /// Waits, then answers with the reply.
        case slow(Duration, Reply)

        public static func json(_ value: JSONValue) -> Reply { .content(value.jsonString) }
    }

    public struct Received: Sendable {
        public var authorization: String?
        public var body: String
        public var at = ContinuousClock.now
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

    public static func start(fallback: Reply, llamaCpp: LlamaCpp? = nil) async throws -> OpenAIServer {
        let state = ServerState(fallback: fallback)
        let router = Router()
        router.post("v1/chat/completions") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 32 << 20)
            let text = String(buffer: body)
            let reply = state.next(Received(authorization: request.headers[.authorization], body: text))
            if let llamaCpp, let refusal = Self.llamaCppRefusal(text, llamaCpp) { return try await Self.respond(refusal) }
            return try await Self.respond(reply)
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

    private static func respond(_ reply: Reply) async throws -> Response {
        switch reply {
        case .content(let content, let finishReason):
            let completion: [String: Any] = [
                "id": "chatcmpl-test", "object": "chat.completion", "created": 1_700_000_000, "model": "gpt-4o-mini",
                "choices": [["index": 0, "message": ["role": "assistant", "content": content], "finish_reason": finishReason]],
                "usage": ["prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20],
            ]
            return json(200, try JSONSerialization.data(withJSONObject: completion))
        case .error(let status, let type, let code, let message, let retryAfter):
            var error: [String: Any] = ["message": message, "type": type, "param": NSNull()]
            error["code"] = code ?? NSNull()
            var response = json(status, try JSONSerialization.data(withJSONObject: ["error": error]))
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        case .raw(let text):
            return json(200, Data(text.utf8))
        case .slow(let delay, let then):
            try await Task.sleep(for: delay)
            return try await respond(then)
        }
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
