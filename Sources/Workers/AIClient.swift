import Foundation
import JSON
import OutboundHTTP
import Queue

/// An OpenAI-compatible chat completions client (`POST {base}/v1/chat/completions`), asking for JSON that
/// matches a schema (`response_format: json_schema`) within a bounded number of tokens (`max_tokens`: llama.cpp,
/// Ollama and vLLM otherwise generate until the context is full). Failures are classified for the queue: network,
/// timeout, 408, 429 and 5xx are retried (after `Retry-After` when the provider says); other 4xx, and a model that
/// cannot take images (llama-server answers that with a 500), are permanent; an answer that is not the JSON asked
/// for is retried (a model may do better on another try).
///
/// A class, made once per job kind: each held call's async frame keeps the client it was called on, and as a
/// struct that was a 352-byte copy of the services per call.
final class AIClient: Sendable {
    let services: WorkerServices

    init(services: WorkerServices) {
        self.services = services
    }

    struct Message: Sendable {
        var role: String
        /// Text, and optionally an image as a data URL (the vision content part).
        var text: String
        var imageDataURL: String?
    }

    /// A request to the model, built whole before it is sent. Its body is the only copy of what it carries (a
    /// photo's data URL is ~44 KB): the messages and the JSON built from them are gone once it exists, so a call held
    /// in flight for seconds keeps one copy of the photo, not four.
    struct Request: Sendable {
        let kind: String
        let http: HTTPRequest
    }

    /// Builds the request (synchronously: nothing here outlives it but the body). Not inlined into the async caller,
    /// whose frame would keep its temporaries while the model thinks (see ``complete(_:_:)``).
    @inline(never)
    func request(kind: String, messages: [Message], schemaName: String, schema: JSONValue) throws -> Request {
        guard let base = services.settings.aiBaseURL else {
            throw JobFailure.permanent("AI_BASE_URL is not configured: no AI model to ask")
        }
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("Accept", "application/json")]
        if let key = services.settings.aiAPIKey { headers.append(("Authorization", "Bearer \(key)")) }
        let body: JSONValue = [
            "model": .string(services.settings.aiModel),
            "max_tokens": .int(services.settings.aiMaxTokens(forKind: kind)),
            "messages": .array(messages.map(Self.encode)),
            "response_format": [
                "type": "json_schema",
                "json_schema": ["name": .string(schemaName), "strict": true, "schema": schema],
            ],
        ]
        return Request(
            kind: kind,
            http: HTTPRequest(
                method: .post, url: base + "/v1/chat/completions", headers: headers, sharing: HTTPRequestBody(utf8: body.jsonString),
                provider: "ai"))
    }

    /// The model's JSON answer to `request`, decoded as `T`.
    ///
    /// Thousands of these wait at once, each keeping its async frame (and its callers') for as long as the model
    /// thinks, and a frame holds the temporaries of the function's synchronous code as well as what lives across its
    /// awaits: written inline, the checks and the decoding below made this frame 1,424 bytes, and the wrapper that
    /// built the request another 1,376. So the work around the two awaits is in functions the compiler does not
    /// inline, and this frame keeps little more than the request.
    func complete<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        // One bucket per provider, shared by every worker process: 50 workers stay within the provider's limit.
        try await services.acquire(forKind: request.kind)
        let response: HTTPResponse
        do {
            response = try await services.http.send(request.http, totalTimeout: requestTimeout(forKind: request.kind))
        } catch {
            throw Self.failure(error)
        }
        return try Self.answer(type, from: response)
    }

    @inline(never)
    private static func failure(_ error: HTTPClientError) -> JobFailure {
        if error.outcome == .permanent { return JobFailure.permanent("AI request refused: \(error)") }
        return JobFailure.retryable("AI request failed: \(error)")
    }

    /// The answer in `response`, or why there is none (classified for the queue).
    @inline(never)
    private static func answer<T: Decodable>(_ type: T.Type, from response: HTTPResponse) throws -> T {
        if response.outcome != .success, refusesImages(response) {
            throw JobFailure.permanent(
                "the AI model cannot take images (AI_MODEL must be a vision model): \(response.status) \(errorMessage(response))")
        }
        switch response.outcome {
        case .success:
            break
        case .retryable:
            throw JobFailure.retryable("AI provider answered \(response.status): \(errorMessage(response))", after: response.retryAfter())
        case .permanent:
            throw JobFailure.permanent("AI provider refused with \(response.status): \(errorMessage(response))")
        }
        guard let completion = try? JSONDecoder().decode(Completion.self, from: Data(response.body)),
            let choice = completion.choices.first, let content = choice.message.content
        else { throw JobFailure.retryable("unusable AI answer: not a chat completion") }
        if choice.finish_reason == "length" { throw JobFailure.retryable("unusable AI answer: cut off at the length limit") }
        do {
            return try JSONDecoder().decode(T.self, from: Data(content.utf8))
        } catch {
            throw JobFailure.retryable("unusable AI answer: the content is not the JSON asked for (\(error))")
        }
    }

    /// The whole request, connection to last byte, ends before the kind's timeout (`jobs/<kind>.yml`: 5 s before it,
    /// or a quarter of it when that is shorter), so a slow model fails the attempt with a clear timeout and the
    /// handler still has time to record it; libcurl's fixed 30 s used to end chats (45 s timeout) early.
    @inline(never)
    func requestTimeout(forKind kind: String) -> Duration {
        let jobTimeout = services.catalog[kind]?.timeout ?? .seconds(30)
        return jobTimeout - min(.seconds(5), jobTimeout / 4)
    }

    /// A text-only model asked about an image: llama-server answers 500 "image input is not supported", other
    /// servers a 4xx naming images or vision. Retrying cannot help.
    static func refusesImages(_ response: HTTPResponse) -> Bool {
        let message = errorMessage(response).lowercased()
        return ["image input is not supported", "does not support image", "image_url is only supported", "vision is not supported"]
            .contains { message.contains($0) }
    }

    /// The part of OpenAI's chat completion answer this client reads.
    struct Completion: Decodable {
        struct Choice: Decodable {
            struct Message: Decodable { var content: String? }
            var message: Message
            // swift-format-ignore: AlwaysUseLowerCamelCase
            var finish_reason: String?
        }
        var choices: [Choice]
    }

    private static func encode(_ message: Message) -> JSONValue {
        guard let image = message.imageDataURL else { return ["role": .string(message.role), "content": .string(message.text)] }
        return [
            "role": .string(message.role),
            "content": [
                ["type": "text", "text": .string(message.text)],
                ["type": "image_url", "image_url": ["url": .string(image), "detail": "auto"]],
            ],
        ]
    }

    /// OpenAI's error shape: `{"error": {"message", "type", "code"}}`; the message only (never our key).
    static func errorMessage(_ response: HTTPResponse) -> String {
        struct Envelope: Decodable {
            struct Body: Decodable {
                var message: String?
                var type: String?
                var code: String?
            }
            var error: Body
        }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(response.body)) else {
            return String(decoding: response.body.prefix(200), as: UTF8.self)
        }
        return [envelope.error.code ?? envelope.error.type, envelope.error.message].compactMap { $0 }.joined(separator: ": ")
    }
}
