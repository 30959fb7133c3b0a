import CCurl
import Traces

/// An outbound call as an OpenTelemetry client span (HTTP semantic conventions), its context sent along as the
/// propagators' headers (`traceparent`), so a model server or a login endpoint that traces continues the trace.
/// Only inside a sampled trace (`TraceSwitch.inSampledTrace`); in one the sampler dropped, only its context is sent
/// (`traceparent` with the flag unset), so whoever is called drops it too.
struct ClientSpan: Sendable {
    let span: RecorderSpan

    /// Starts the span of `request` and adds its context's headers to it (replacing any of the same name).
    init(_ request: inout HTTPRequest) {
        span = TraceSwitch.startSpan(request.method.rawValue, ofKind: .client)
        let target = Self.target(of: request.url)
        var fields = SpanFields(capacity: 5)
        fields.append("http.request.method", .string(request.method.rawValue))
        if let target {
            // Without its query: a query may carry a key (the conventions ask for credentials to be redacted).
            fields.append("url.full", .string(target.url))
            fields.append("server.address", .string(target.host))
            fields.append("server.port", .int(Int64(target.port)))
        }
        fields.append("carbscan.http.provider", .string(request.provider))
        span.set(fields)
        Self.inject(TraceCarrier.propagated(span.identity), into: &request)
    }

    /// Sends the current context along without a span of its own (a trace the sampler dropped).
    static func propagate(into request: inout HTTPRequest) {
        inject(TraceCarrier.currentFields, into: &request)
    }

    /// Adds the propagation headers to the request, replacing any of the same name.
    private static func inject(_ fields: [String: String], into request: inout HTTPRequest) {
        if !fields.isEmpty {
            request.headers.removeAll { header in fields.keys.contains(header.name.lowercased()) }
            request.headers += fields.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        }
    }

    /// Ends it with the response's status (an error from 400 up, as the conventions say of a client) or the error.
    func end(status: Int?, error: HTTPClientError?) {
        if let status {
            span.set("http.response.status_code", .int(Int64(status)))
            if status >= 400 {
                span.set("error.type", .string(String(status)))
                span.setStatus(SpanStatus(code: .error))
            }
        }
        if let error {
            span.set("error.type", .string("\(error.code)"))
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.message))
        }
        span.end()
    }

    /// The URL without its query or credentials, its host and port (the scheme's default when none is written).
    static func target(of text: String) -> (url: String, host: String, port: Int)? {
        guard let url = curl_url() else { return nil }
        defer { curl_url_cleanup(url) }
        guard curl_url_set(url, CURLUPART_URL, text, 0) == CURLUE_OK else { return nil }
        func part(_ part: CURLUPart, _ flags: UInt32 = 0) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl_url_get(url, part, &value, flags) == CURLUE_OK, let value else { return nil }
            defer { curl_free(value) }
            return String(cString: value)
        }
        guard let scheme = part(CURLUPART_SCHEME), let host = part(CURLUPART_HOST),
            let port = part(CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT)).flatMap(Int.init)
        else { return nil }
        let written = part(CURLUPART_PORT).map { ":\($0)" } ?? ""
        return ("\(scheme)://\(host)\(written)\(part(CURLUPART_PATH) ?? "/")", host, port)
    }
}
