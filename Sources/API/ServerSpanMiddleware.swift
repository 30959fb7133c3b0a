import HTTPTypes
import Hummingbird
import Traces

/// The API's server span per request, continuing the client's W3C `traceparent`, named and described as OpenTelemetry's
/// HTTP conventions say (`GET /api/mobile/v1/meals`; `http.request.method`, `url.path`, `http.route`,
/// `http.response.status_code`…).
///
/// Written instead of Hummingbird's `TracingMiddleware`, because of what that one costs a request the sampler dropped
/// (`ops/bench/tracing.sh`, 2026-11-27: GET /meals −15.5%, POST /logins −19% with nothing sampled): it builds every
/// attribute of a span that records nothing, and it always wraps the response's body in a closure to end the span
/// after the last byte, which takes the response off Hummingbird's one-write path (head, body and end as one batch)
/// onto three writes. Here a span that is not recording gets no attributes, and a recorded one ends as a body of known
/// length is handed over; only a stream's span waits for its last byte.
struct ServerSpanMiddleware: RouterMiddleware {
    typealias Context = APIContext

    /// Query parameters whose values never reach a span.
    let redactedQueryParameters: Set<Substring>
    /// The proxies whose forwarded client is `client.address` (`TRUSTED_PROXIES`).
    let proxies: TrustedProxies

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // A trace the sampler drops gets no span: only its context, for the job and the calls the request makes.
        let parent: SampledParent
        switch TraceSwitch.decide(
            traceparent: request.headers.value(TraceHeaders.traceparent).map { $0[...] },
            tracestate: request.headers.value(TraceHeaders.tracestate).map { $0[...] })
        {
        case .dropped(let dropped):
            return try await CurrentTrace.local.withValue(.dropped(dropped)) { try await next(request, context) }
        case .sampled(let sampled): parent = sampled
        case nil: return try await next(request, context)
        }
        let method = request.method.rawValue
        let span = TraceSwitch.startSpan(method, parent: parent, ofKind: .server)
        // Described here and handed to the span once, as it ends: each attribute set on a span takes its lock.
        var fields = describe(request, context: context)
        do {
            let response = try await TraceSwitch.current(span) { try await next(request, context) }
            finish(span, method: method, context: context, status: Int(response.status.code), into: &fields)
            guard let length = response.body.contentLength else {
                // A stream (server-sent events): the span ends after its last byte.
                span.set(fields)
                return endingAfterBody(response, span: span)
            }
            // A body of known length ends the span as it is handed over, a few µs before its bytes are written:
            // wrapping it would take it off Hummingbird's one-write path (head, body and end as one batch).
            fields.append("http.response.body.size", .int(Int64(length)))
            span.set(fields)
            span.end()
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            finish(span, method: method, context: context, status: status, into: &fields)
            span.set(fields)
            if status >= 500 { span.setStatus(.init(code: .error)) }
            span.recordError(error)
            span.end()
            throw error
        }
    }

    /// The response whose body ends the span once written (or abandoned).
    private func endingAfterBody(_ response: Response, span: any Span) -> Response {
        var response = response
        let body = response.body
        let owner = SpanOwner(span)
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            defer { owner.end() }
            try await body.write(writer)
        }
        return response
    }

    private func describe(_ request: Request, context: Context) -> SpanFields {
        var fields = SpanFields(capacity: 16)
        fields.append("http.request.method", .string(request.method.rawValue))
        fields.append("url.path", .string(request.uri.path))
        fields.append("url.scheme", "http")
        if let query = request.uri.query, !query.isEmpty {
            fields.append(
                "url.query",
                .string(
                    request.uri.queryParameters
                        .map { redactedQueryParameters.contains($0.key) ? "\($0.key)=REDACTED" : "\($0.key)=\($0.value)" }
                        .joined(separator: "&")))
        }
        let headers = request.headers
        if let agent = headers.value(.userAgent) { fields.append("user_agent.original", .string(agent)) }
        if let length = headers.value(.contentLength).flatMap({ Int64($0) }) { fields.append("http.request.body.size", .int(length)) }
        if let type = headers.value(.contentType) { fields.append("http.request.header.content_type", .other(.stringArray([type]))) }
        // Read here, not from the context: this layer runs before `ClientAddressMiddleware` (whose context it never
        // sees), so `client.address` was the proxy's. The peer's address is made text once, for both attributes.
        let peer = context.peerIP
        if let peer { fields.append("network.peer.address", .string(peer)) }
        if let client = proxies.client(peer: peer, headers: headers) { fields.append("client.address", .string(client)) }
        return fields
    }

    /// The route, known once the router has matched it, names the span (`{method} {route}`).
    private func finish(_ span: RecorderSpan, method: String, context: Context, status: Int, into fields: inout SpanFields) {
        if let route = context.endpointPath {
            span.operationName = "\(method) \(route)"
            fields.append("http.route", .string(route))
        }
        fields.append("http.response.status_code", .int(Int64(status)))
    }
}

/// Ends the span once, when the body's last byte is written or, should the body never be written, when released.
private final class SpanOwner: @unchecked Sendable {
    private var span: (any Span)?

    init(_ span: any Span) { self.span = span }

    func end() {
        span?.end()
        span = nil
    }

    deinit { span?.end() }
}

/// The W3C Trace Context headers, by names made once.
private enum TraceHeaders {
    static let traceparent = HTTPField.Name("traceparent")!
    static let tracestate = HTTPField.Name("tracestate")!
}
