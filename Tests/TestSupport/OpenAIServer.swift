import Foundation
import Hummingbird
import Queue
import Synchronization

/// A local server speaking OpenAI's chat completions API (`POST /v1/chat/completions`), answering from a script:
/// a JSON answer in a completion, OpenAI's error shape with a status (and `Retry-After`), a malformed or truncated
/// body, or a slow answer. It records every request it got.
public final class OpenAIServer: Sendable {
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

    public static func start(fallback: Reply) async throws -> OpenAIServer {
        let state = ServerState(fallback: fallback)
        let router = Router()
        router.post("v1/chat/completions") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 32 << 20)
            let reply = state.next(Received(authorization: request.headers[.authorization], body: String(buffer: body)))
            return try await Self.respond(reply)
        }
        let server = try await LocalServer.start(router, name: "openai")
        return OpenAIServer(port: server.port, server: server, state: state)
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
