import CCurl
import Logging
import Traces

/// An HTTP client over libcurl's multi interface: one multi handle per client, driven by one dedicated OS thread, so
/// any number of concurrent requests cost one thread. HTTPS speaks HTTP/2 where the server offers it (ALPN), and
/// concurrent requests to one host then share a connection as streams; cleartext speaks HTTP/1.1, one request per
/// connection at a time, connections kept alive and reused.
///
/// TLS peers are verified against the system CA bundle (or ``HTTPClientOptions/caBundlePath``); redirects are returned, not followed; proxies come from the
/// usual `http_proxy`/`https_proxy`/`no_proxy` environment variables, as libcurl reads them. Make one client per
/// process (or per set of options) and call ``shutdown()`` when done; dropping the last reference shuts it down too.
package final class HTTPClient: Sendable {
    package let options: HTTPClientOptions
    /// Told of every call's outcome and duration (`/metrics`); nil: nothing is measured.
    package let observer: (any HTTPClientObserver)?
    private let thread: CurlMultiThread

    /// - Parameter threadName: its transfers' thread's name (at most 15 bytes are kept), which `top -H` and `perf` show.
    package init(
        options: HTTPClientOptions = .init(), logger: Logger = Logger(label: "carbscan.http"), observer: (any HTTPClientObserver)? = nil,
        threadName: String = "carbscan.http"
    ) {
        self.options = options
        self.observer = observer
        self.thread = CurlMultiThread(name: threadName, options: options, logger: logger)
    }

    deinit {
        thread.shutdown()
    }

    /// How many libcurl connection caches (multi handles) the client's thread drives: one per 512 connections its
    /// per-host limit allows, at most 16 (``HTTPClientOptions/maxConnectionsPerHost``).
    package var connectionCaches: Int { CurlMultiThread.cacheCount(options) }

    /// Sends a request and waits for the whole response. Any HTTP status is a response; see ``HTTPResponse/outcome``.
    ///
    /// Cancelling the calling task aborts the transfer at once and throws ``HTTPClientError/Code/cancelled``.
    /// - Parameters:
    ///   - connectTimeout: Replaces ``HTTPClientOptions/connectTimeout`` for this request.
    ///   - totalTimeout: Replaces ``HTTPClientOptions/totalTimeout`` for this request.
    package func send(
        _ request: HTTPRequest, connectTimeout: Duration? = nil, totalTimeout: Duration? = nil
    ) async throws(HTTPClientError) -> HTTPResponse {
        // The synchronous work before and after the wait is in functions of their own: this frame is kept while the
        // call waits (thousands of AI calls at once), and holds the call's reference only.
        if TraceSwitch.isOn, TraceCarrier.inTrace {
            return try await tracedSend(request, connectTimeout: connectTimeout, totalTimeout: totalTimeout)
        }
        let call = try self.call(request, connectTimeout: connectTimeout, totalTimeout: totalTimeout)
        return try finish(call, await thread.submit(call))
    }

    private func tracedSend(
        _ request: HTTPRequest, connectTimeout: Duration?, totalTimeout: Duration?
    ) async throws(HTTPClientError) -> HTTPResponse {
        var request = request
        guard TraceSwitch.inSampledTrace else {
            ClientSpan.propagate(into: &request)
            let call = try self.call(request, connectTimeout: connectTimeout, totalTimeout: totalTimeout)
            return try finish(call, await thread.submit(call))
        }
        let span = ClientSpan(&request)
        do {
            let call = try self.call(request, connectTimeout: connectTimeout, totalTimeout: totalTimeout)
            let response = try finish(call, await thread.submit(call))
            span.end(status: response.status, error: nil)
            return response
        } catch {
            span.end(status: nil, error: error)
            throw error
        }
    }

    /// Sends a request and returns as soon as the response's status and headers have arrived, its body following as
    /// libcurl reads it (server-sent events, a model writing its answer). Any HTTP status is a response.
    ///
    /// Everything ``send(_:connectTimeout:totalTimeout:)`` promises holds for the whole exchange, body included:
    /// the total timeout, ``HTTPClientOptions/maxResponseBytes`` (the body then throws
    /// ``HTTPClientError/Code/responseTooLarge``), and the observer, told once when the body ends (from the client's
    /// thread) or is abandoned. Cancelling the calling task while the head is awaited, or the task reading the body
    /// while it arrives, or dropping the body unread, aborts the transfer.
    package func stream(
        _ request: HTTPRequest, connectTimeout: Duration? = nil, totalTimeout: Duration? = nil
    ) async throws(HTTPClientError) -> HTTPStreamingResponse {
        let (chunks, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let sink = BodySink(continuation)
        var request = request
        // Its span lasts until the body ends, as the exchange does.
        let span = TraceSwitch.inSampledTrace ? ClientSpan(&request) : nil
        if span == nil, TraceSwitch.isOn { ClientSpan.propagate(into: &request) }
        let call: OutboundCall
        do {
            call = try self.call(request, connectTimeout: connectTimeout, totalTimeout: totalTimeout, sink: sink)
        } catch {
            span?.end(status: nil, error: error)
            throw error
        }
        // Called once, when the sink is finished (the transfer ended, on the client's thread) or when the reader
        // goes away first (cancelled or dropped), which must abort the transfer.
        continuation.onTermination = { [thread, observer] termination in
            var error: HTTPClientError.Code?
            switch termination {
            case .cancelled:
                thread.cancel(call.id)
                error = .cancelled
            case .finished(let failure):
                error = failure.map { ($0 as? HTTPClientError)?.code ?? .transport }
            @unknown default:
                error = .transport
            }
            let duration = ContinuousClock.now - call.started
            observer?.requestFinished(
                provider: call.request.provider, status: error == nil ? sink.status : nil, error: error, duration: duration)
            span?.end(
                status: sink.status == 0 ? nil : sink.status,
                error: error.map { HTTPClientError($0, "the response's body ended with \($0)") })
        }
        switch await thread.submit(call) {
        case .success(let head):
            return HTTPStreamingResponse(status: head.status, headers: head.headers, body: HTTPResponseBody(chunks: chunks, sink: sink))
        case .failure(let error):
            sink.finish(.failure(error))  // refused before it reached the thread: nothing else finishes it
            throw error
        }
    }

    /// The call to submit. A URL that cannot be sent fails here, and is reported like any other failure.
    @inline(never)
    private func call(
        _ request: HTTPRequest, connectTimeout: Duration?, totalTimeout: Duration?, sink: BodySink? = nil
    ) throws(HTTPClientError) -> OutboundCall {
        do {
            let (host, tls) = try Self.target(of: request)
            return thread.call(request, host: host, tls: tls, connectTimeout: connectTimeout, totalTimeout: totalTimeout, sink: sink)
        } catch {
            observer?.requestFinished(provider: request.provider, status: nil, error: error.code, duration: .zero)
            throw error
        }
    }

    /// Tells the observer how the call ended, then returns its response or throws its error.
    @inline(never)
    private func finish(_ call: OutboundCall, _ result: Result<HTTPResponse, HTTPClientError>) throws(HTTPClientError) -> HTTPResponse {
        if let observer {
            let duration = ContinuousClock.now - call.started
            switch result {
            case .success(let response):
                observer.requestFinished(provider: call.request.provider, status: response.status, error: nil, duration: duration)
            case .failure(let error):
                observer.requestFinished(provider: call.request.provider, status: nil, error: error.code, duration: duration)
            }
        }
        return try result.get()
    }

    /// Fails in-flight and queued requests with ``HTTPClientError/Code/shutdown``, refuses new ones, and stops the
    /// thread. Idempotent; returns without waiting for the thread to exit.
    package func shutdown() {
        thread.shutdown()
    }

    /// The URL's host and whether it is `https`, checked with libcurl's own parser so a bad URL fails before it
    /// reaches the thread.
    private static func target(of request: HTTPRequest) throws(HTTPClientError) -> (host: String, tls: Bool) {
        let method = request.method.rawValue
        guard let url = curl_url() else { throw HTTPClientError(.transport, "\(method): curl_url failed") }
        defer { curl_url_cleanup(url) }
        let code = curl_url_set(url, CURLUPART_URL, request.url, 0)
        guard code == CURLUE_OK else {
            // The URL itself stays out of the message: its query may carry a key.
            throw HTTPClientError(.invalidURL, "\(method): invalid URL (\(String(cString: curl_url_strerror(code))))")
        }
        let scheme = part(CURLUPART_SCHEME, of: url)?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw HTTPClientError(.invalidURL, "\(method): unsupported URL scheme \(scheme ?? "none")")
        }
        guard let host = part(CURLUPART_HOST, of: url), !host.isEmpty else {
            throw HTTPClientError(.invalidURL, "\(method): URL has no host")
        }
        return (host, scheme == "https")
    }

    private static func part(_ part: CURLUPart, of url: OpaquePointer) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(url, part, &value, 0) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
}
