import Foundation
import JSON
import OutboundHTTP
import Queue
import Synchronization

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

    /// A request the model may answer streamed (``complete(_:_:streaming:to:)``): the one-shot request, and the same
    /// asking for the answer as server-sent chunks. A type of its own so that ``Request``, which every held call's
    /// frame keeps, does not grow.
    struct StreamableRequest: Sendable {
        let whole: Request
        let streamed: HTTPRequest
    }

    /// Builds the request (synchronously: nothing here outlives it but the body). Not inlined into the async caller,
    /// whose frame would keep its temporaries while the model thinks (see ``complete(_:_:)``).
    @inline(never)
    func request(kind: String, messages: [Message], schemaName: String, schema: JSONValue) throws -> Request {
        Request(kind: kind, http: try http(kind: kind, messages: messages, schemaName: schemaName, schema: schema, stream: false))
    }

    /// Builds the request and its streamed twin.
    @inline(never)
    func streamableRequest(kind: String, messages: [Message], schemaName: String, schema: JSONValue) throws -> StreamableRequest {
        StreamableRequest(
            whole: Request(
                kind: kind, http: try http(kind: kind, messages: messages, schemaName: schemaName, schema: schema, stream: false)),
            streamed: try http(kind: kind, messages: messages, schemaName: schemaName, schema: schema, stream: true))
    }

    private func http(kind: String, messages: [Message], schemaName: String, schema: JSONValue, stream: Bool) throws -> HTTPRequest {
        guard let base = services.settings.aiBaseURL else {
            throw JobFailure.permanent("AI_BASE_URL is not configured: no AI model to ask")
        }
        // A streamed answer comes as `text/event-stream`; its errors, and a server's that ignores `stream`, as JSON.
        let accept = stream ? "text/event-stream, application/json" : "application/json"
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("Accept", accept)]
        if let key = services.settings.aiAPIKey { headers.append(("Authorization", "Bearer \(key)")) }
        var body: [String: JSONValue] = [
            "model": .string(services.settings.aiModel),
            "max_tokens": .int(services.settings.aiMaxTokens(forKind: kind)),
            "messages": .array(messages.map(Self.encode)),
            "response_format": [
                "type": "json_schema",
                "json_schema": ["name": .string(schemaName), "strict": true, "schema": schema],
            ],
        ]
        // No `stream_options: {include_usage: true}`: nothing reads the usage, and a server that does not know the
        // option would refuse the stream for it.
        if stream { body["stream"] = true }
        return HTTPRequest(
            method: .post, url: base + "/v1/chat/completions", headers: headers,
            sharing: HTTPRequestBody(utf8: JSONValue.object(body).jsonString), provider: "ai")
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

    /// Like ``complete(_:_:)``, with the answer streamed (`"stream": true`, OpenAI's server-sent chunks, which
    /// llama.cpp, Ollama and vLLM speak too): the decoded text of the answer's string member `field` goes to `events`
    /// as `delta`s while the model writes it, a few at most every ``deltaInterval``, and the whole answer is then
    /// checked and decoded exactly as ``complete(_:_:)`` does, with the same errors.
    ///
    /// A server that cannot stream still answers: one that ignores `stream` (an old server, a buffering proxy) with
    /// a whole completion, published as one delta; one that refuses it (a 400 or 422) is asked again at once without
    /// it, within the same attempt, rate-limit token and timeout, and if that succeeds the process asks that URL
    /// unstreamed from then on. A stream that breaks before its end fails the attempt as a failed call does
    /// (retryable); what was published of it stays published, and the next attempt's deltas start over.
    func complete<T: Decodable>(_ type: T.Type, _ request: StreamableRequest, streaming field: String, to events: JobEvents)
        async throws -> T
    {
        try await services.acquire(forKind: request.whole.kind)
        let deadline = ContinuousClock.now + requestTimeout(forKind: request.whole.kind)
        let streamed = request.streamed
        guard !Self.cannotStream(streamed.url) else { return try await whole(type, request.whole.http, until: deadline, field, events) }
        let response: HTTPStreamingResponse
        do {
            response = try await services.http.stream(streamed, totalTimeout: deadline - .now)
        } catch {
            throw Self.failure(error)
        }
        guard (200..<300).contains(response.status) else {
            let refusal = try await Self.collect(response)
            guard Self.mayRefuseStreaming(refusal) else { return try Self.answer(type, from: refusal) }
            let answer = try await whole(type, request.whole.http, until: deadline, field, events)
            Self.unstreamable.withLock { _ = $0.insert(streamed.url) }
            return answer
        }
        guard response.header("Content-Type")?.lowercased().hasPrefix("text/event-stream") == true else {
            return try await Self.publishWhole(type, try await Self.collect(response), field, events)
        }
        return try await Self.read(type, response.body, field, events)
    }

    /// The URLs that refused a streamed request and answered it unstreamed: asked unstreamed for the rest of the
    /// process's life.
    private static let unstreamable = Mutex<Set<String>>([])

    private static func cannotStream(_ url: String) -> Bool { unstreamable.withLock { $0.contains(url) } }

    /// Publishing at most this often: a 500-token answer is then a few dozen events, not 500 Redis writes.
    static let deltaInterval = Duration.milliseconds(50)
    /// …unless this many bytes are waiting.
    static let deltaBytes = 512

    /// The unstreamed call, its answer's `field` published as one delta.
    private func whole<T: Decodable>(
        _ type: T.Type, _ http: HTTPRequest, until deadline: ContinuousClock.Instant, _ field: String, _ events: JobEvents
    ) async throws -> T {
        let response: HTTPResponse
        do {
            response = try await services.http.send(http, totalTimeout: deadline - .now)
        } catch {
            throw Self.failure(error)
        }
        return try await Self.publishWhole(type, response, field, events)
    }

    private static func publishWhole<T: Decodable>(_ type: T.Type, _ response: HTTPResponse, _ field: String, _ events: JobEvents)
        async throws -> T
    {
        let content = try content(from: response)
        let answer = try decode(type, content)  // an answer that will not be stored is not published either
        var member = StreamedJSONField(name: field)
        await events.delta(member.feed(content))
        return answer
    }

    private static func collect(_ response: HTTPStreamingResponse) async throws -> HTTPResponse {
        do {
            return try await response.collect()
        } catch {
            throw failure(error)
        }
    }

    /// A refusal that may be of `stream` itself: OpenAI-style servers answer an unknown or unsupported parameter
    /// with 400 (vLLM's validation with 400 or 422), naming it or not. Worth one unstreamed try.
    private static func mayRefuseStreaming(_ response: HTTPResponse) -> Bool {
        response.status == 400 || response.status == 422
    }

    /// Reads the server-sent chunks: `data: {chat.completion.chunk}` events, `choices[0].delta.content` pieces
    /// appended, and `data: [DONE]` at the end.
    private static func read<T: Decodable>(_ type: T.Type, _ body: HTTPResponseBody, _ field: String, _ events: JobEvents)
        async throws -> T
    {
        var parser = ServerSentEventParser()
        var member = StreamedJSONField(name: field)
        var deltas = DeltaBuffer(events: events)
        var content = ""
        var finishReason: String?
        var done = false
        do {
            // Read to the end even past `[DONE]`: a body dropped unread aborts the transfer and its connection.
            for try await bytes in body where !done {
                for event in parser.feed(bytes) where !done {
                    if event.data == "[DONE]" {
                        done = true
                        break
                    }
                    let chunk = try streamChunk(event.data)
                    guard let choice = chunk.choices?.first else { continue }  // the usage chunk has none
                    if let piece = choice.delta?.content {
                        content += piece
                        await deltas.add(member.feed(piece))
                    }
                    if let reason = choice.finish_reason { finishReason = reason }
                }
            }
        } catch let error as HTTPClientError {
            throw failure(error)
        }
        await deltas.flush()
        guard done || finishReason != nil else {
            throw JobFailure.retryable("AI request failed: the answer's stream ended before the answer did")
        }
        if finishReason == "length" { throw JobFailure.retryable("unusable AI answer: cut off at the length limit") }
        return try decode(type, content)
    }

    /// One `data:` of the stream; an error event (OpenAI sends `{"error": {…}}` when the model fails mid-answer) or
    /// anything else fails the attempt, to be tried again.
    private static func streamChunk(_ data: String) throws -> StreamChunk {
        guard let chunk = try? JSONDecoder().decode(StreamChunk.self, from: Data(data.utf8)) else {
            throw JobFailure.retryable("unusable AI answer: a streamed chunk is not a chat completion chunk")
        }
        if let error = chunk.error {
            let message = [error.code ?? error.type, error.message].compactMap { $0 }.joined(separator: ": ")
            throw JobFailure.retryable("AI provider failed mid-answer: \(message)")
        }
        return chunk
    }

    /// The part of OpenAI's `chat.completion.chunk` this client reads.
    struct StreamChunk: Decodable {
        struct Choice: Decodable {
            struct Delta: Decodable { var content: String? }
            var delta: Delta?
            // swift-format-ignore: AlwaysUseLowerCamelCase
            var finish_reason: String?
        }
        struct Failure: Decodable {
            var message: String?
            var type: String?
            var code: String?
        }
        var choices: [Choice]?
        var error: Failure?
    }

    /// Text waiting to be published: the first piece at once, then whatever gathered once ``deltaInterval`` has
    /// passed since the last event or ``deltaBytes`` are waiting, and the rest at the end. (Checked as pieces
    /// arrive: a model pausing mid-answer holds back at most what came in the last interval.)
    private struct DeltaBuffer {
        let events: JobEvents
        var pending = ""
        var published: ContinuousClock.Instant?

        mutating func add(_ text: String) async {
            pending += text
            guard !pending.isEmpty else { return }
            let now = ContinuousClock.now
            if let published, now - published < AIClient.deltaInterval, pending.utf8.count < AIClient.deltaBytes { return }
            await flush(at: now)
        }

        mutating func flush(at now: ContinuousClock.Instant = .now) async {
            guard !pending.isEmpty else { return }
            let text = pending
            pending = ""
            published = now
            await events.delta(text)
        }
    }

    @inline(never)
    private static func failure(_ error: HTTPClientError) -> JobFailure {
        if error.outcome == .permanent { return JobFailure.permanent("AI request refused: \(error)") }
        return JobFailure.retryable("AI request failed: \(error)")
    }

    /// The answer in `response`, or why there is none (classified for the queue).
    @inline(never)
    private static func answer<T: Decodable>(_ type: T.Type, from response: HTTPResponse) throws -> T {
        try decode(type, content(from: response))
    }

    /// The message content of a successful completion, or why there is none (classified for the queue).
    @inline(never)
    private static func content(from response: HTTPResponse) throws -> String {
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
        return content
    }

    /// The answer's JSON decoded as `T`; not that JSON is retried (a model may do better on another try).
    @inline(never)
    private static func decode<T: Decodable>(_ type: T.Type, _ content: String) throws -> T {
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
