import CCurl
import Durations
import Foundation

/// One request on its libcurl easy handle. Lives only on the client's thread, from set-up to completion: the
/// easy handle, its header list, the body and the error buffer are all freed together in `close()`.
final class Transfer {
    let id: UInt64
    let method: HTTPRequest.Method
    let host: String
    let started = ContinuousClock.now
    /// When the total timeout passes.
    let deadline: ContinuousClock.Instant
    private(set) var continuation: CheckedContinuation<Result<HTTPResponse, HTTPClientError>, Never>?
    let easy: UnsafeMutableRawPointer
    /// The index of the client's multi handle that drives it.
    let multi: Int
    private let maxResponseBytes: Int
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// POSTFIELDS is not copied by libcurl: the body (shared with the request, never copied) lives until the transfer ends.
    private var requestBody: HTTPRequestBody?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []
    /// A streamed transfer's body goes here as it arrives, and the caller is answered with the head alone.
    private let sink: BodySink?
    /// The bytes of a streamed body so far (a collected one counts `body`).
    private var streamedBytes = 0
    /// Set when a callback aborted the transfer because the body would pass `maxResponseBytes`.
    private var tooLarge = false

    /// libcurl's smallest upload buffer.
    static let uploadBufferBytes = 16384
    /// libcurl's smallest receive buffer.
    static let receiveBufferBytes = 1024

    /// Prepares the easy handle; fails with `.invalidRequest`/`.invalidURL` when libcurl refuses an option.
    init(_ pending: PendingRequest, multi: Int, options: HTTPClientOptions) throws(HTTPClientError) {
        guard let easy = curl_easy_init() else { throw HTTPClientError(.transport, "curl_easy_init failed") }
        self.id = pending.id
        self.multi = multi
        self.method = pending.request.method
        self.host = pending.host
        self.continuation = pending.continuation
        self.easy = easy
        self.maxResponseBytes = options.maxResponseBytes
        self.sink = pending.call.sink
        self.deadline = started + (pending.call.totalTimeout ?? options.totalTimeout)
        errorBuffer.initialize(to: 0)
        do {
            try configure(pending, options: options)
        } catch {
            continuation = nil
            close()
            throw error
        }
    }

    private func configure(_ pending: PendingRequest, options: HTTPClientOptions) throws(HTTPClientError) {
        let request = pending.request
        try set(CURLOPT_URL, string: request.url)
        try set(CURLOPT_PROTOCOLS_STR, string: "http,https")
        try set(CURLOPT_USERAGENT, string: options.userAgent)
        try set(CURLOPT_ERRORBUFFER, pointer: errorBuffer)
        try set(CURLOPT_NOSIGNAL, 1)
        // HTTP/2 when TLS's ALPN offers it, HTTP/1.1 otherwise and always over cleartext (no h2c upgrade attempt).
        try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // While the first connection to a host is being set up, wait for it (it may carry this request as another
        // HTTP/2 stream) instead of opening one more. HTTPS only: ALPN settles the question at the handshake, but a
        // cleartext host stays "unknown" to libcurl until its first response arrives, and every other request to it
        // would wait that long.
        if pending.call.tls { try set(CURLOPT_PIPEWAIT, 1) }
        // A streamed caller is answered at the end of the final head: a proxy's CONNECT answer must not look like it.
        if sink != nil { try set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1) }
        try set(CURLOPT_FOLLOWLOCATION, 0)
        // libcurl gives a transfer that sends its body over HTTP/2 (or one over 64 KiB) a 64 KiB upload buffer, held
        // until the transfer ends; 16 KiB is its smallest. 10,000 POSTs of 1 KiB held over HTTP/2: 28.4 → 24.3 KB of
        // RSS per request (`ops/bench/http-inflight.sh`, 2026-11-25).
        try set(CURLOPT_UPLOAD_BUFFERSIZE, Self.uploadBufferBytes)
        // The receive buffer, 16 KiB by default, is allocated with the handle and held until it ends: the largest
        // allocation of a held request (heaptrack). Its untouched pages cost nothing while nothing else runs (10,000
        // requests held alone: 19.7 → 19.5 KB each with 4 KiB), but a worker allocates and frees all the time and its
        // heap grows to the bytes allocated: 10,000 chats held against a 5 s model peaked at 350 and 354 MB with
        // 16 KiB, 342 and 345 with 4 KiB, 318 and 313 with 1 KiB, worker CPU per chat no higher
        // (`ops/bench/slow-provider.sh`, 2026-11-26). An AI answer of a few KB takes a few reads more.
        try set(CURLOPT_BUFFERSIZE, Self.receiveBufferBytes)
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caBundlePath = options.caBundlePath { try set(CURLOPT_CAINFO, string: caBundlePath) }
        try set(CURLOPT_CONNECTTIMEOUT_MS, (pending.call.connectTimeout ?? options.connectTimeout).curlMilliseconds)
        try set(CURLOPT_TIMEOUT_MS, (pending.call.totalTimeout ?? options.totalTimeout).curlMilliseconds)

        switch request.method {
        case .get: try set(CURLOPT_HTTPGET, 1)
        case .head: try set(CURLOPT_NOBODY, 1)
        case .post: try set(CURLOPT_POST, 1)
        case .put, .patch, .delete: try set(CURLOPT_CUSTOMREQUEST, string: request.method.rawValue)
        }
        if let body = request.body ?? (request.method.alwaysHasBody ? HTTPRequestBody([]) : nil) {
            if request.method == .get || request.method == .head {
                throw HTTPClientError(.invalidRequest, method, host, "a body is not sent with \(method.rawValue)")
            }
            requestBody = body
            // The explicit size lets bodies hold zero bytes (and be empty); with CURLOPT_CUSTOMREQUEST set above,
            // PUT/PATCH/DELETE keep their verb.
            try check(carbscan_curl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            try set(CURLOPT_POSTFIELDS, pointer: body.address)
        }

        var lines: [String] = []
        for (name, value) in request.headers {
            guard name.isValidHeaderName, value.isValidHeaderValue else {
                throw HTTPClientError(.invalidRequest, method, host, "malformed header \(name.debugDescription)")
            }
            // "Name;" is libcurl's spelling of a header sent with an empty value ("Name:" would remove it).
            lines.append(value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        // libcurl would add `Content-Type: application/x-www-form-urlencoded` to a body and `Expect: 100-continue`
        // to a large one (stalling a second on servers that ignore it): send neither unless asked.
        for name in ["content-type", "expect"] where !request.headers.contains(where: { $0.name.lowercased() == name }) {
            lines.append("\(name):")
        }
        for line in lines {
            guard let list = curl_slist_append(headerList, line) else { throw HTTPClientError(.transport, method, host, "out of memory") }
            headerList = list
        }
        try set(CURLOPT_HTTPHEADER, pointer: headerList)

        // Unretained: the thread keeps the transfer alive until its handle leaves the multi handle.
        let context = Unmanaged.passUnretained(self).toOpaque()
        try check(
            carbscan_curl_easy_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
                return transfer.receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count))
            })
        try set(CURLOPT_HEADERDATA, pointer: context)
        try check(
            carbscan_curl_easy_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
                return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
            })
        try set(CURLOPT_WRITEDATA, pointer: context)
    }

    /// Called by libcurl once per header line, status lines and the blank line included. Returning less than the
    /// line's length aborts the transfer.
    private func receiveHeader(_ line: UnsafeRawBufferPointer) -> Int {
        if line.starts(with: "HTTP/".utf8) {
            // A new status line: whatever came before belonged to an interim (1xx) response.
            headers.removeAll()
            return line.count
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            // The blank line: a streamed caller gets the head now, unless it ends an interim (1xx) response.
            if sink != nil { answerWithHead(finalOnly: true) }
            return line.count
        }
        let name = String(decoding: line[..<colon], as: UTF8.self).trimmingCharacters(in: .whitespaces)
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        headers.append((name: name, value: value))
        if method != .head, name.lowercased() == "content-length", let length = Int(value), length > maxResponseBytes {
            tooLarge = true
            return 0
        }
        return line.count
    }

    private func receiveBody(_ chunk: UnsafeRawBufferPointer) -> Int {
        if let sink { return stream(chunk, to: sink) }
        guard body.count + chunk.count <= maxResponseBytes else {
            tooLarge = true
            return 0
        }
        body.append(contentsOf: chunk)
        return chunk.count
    }

    private func stream(_ chunk: UnsafeRawBufferPointer, to sink: BodySink) -> Int {
        guard streamedBytes + chunk.count <= maxResponseBytes else {
            tooLarge = true
            return 0
        }
        streamedBytes += chunk.count
        answerWithHead(finalOnly: false)
        sink.yield(chunk)
        return chunk.count
    }

    /// Answers a streamed caller with the status and headers, once. `finalOnly`: not if the status is interim.
    private func answerWithHead(finalOnly: Bool) {
        guard let continuation else { return }
        var status = 0
        _ = carbscan_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        if finalOnly && status < 200 { return }
        sink?.received(status: status)
        continuation.resume(returning: .success(HTTPResponse(status: status, headers: headers)))
        self.continuation = nil
    }

    /// The result of a transfer libcurl reported done with `code`.
    func result(_ code: CURLcode) -> Result<HTTPResponse, HTTPClientError> {
        guard code == CURLE_OK else { return .failure(error(code)) }
        var status = 0
        _ = carbscan_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        return .success(HTTPResponse(status: status, headers: headers, body: body))
    }

    private func error(_ code: CURLcode) -> HTTPClientError {
        let detail = errorBuffer.pointee == 0 ? String(cString: curl_easy_strerror(code)) : String(cString: errorBuffer)
        if tooLarge { return HTTPClientError(.responseTooLarge, method, host, "response body over \(maxResponseBytes) bytes") }
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return HTTPClientError(.invalidURL, method, host, detail)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return HTTPClientError(.connect, method, host, detail)
        case CURLE_OPERATION_TIMEDOUT:
            // Connect and total timeouts alike: both mean "no answer in time".
            return HTTPClientError(.timeout, method, host, detail)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
            CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
            CURLE_USE_SSL_FAILED:
            return HTTPClientError(.tls, method, host, detail)
        default:
            return HTTPClientError(.transport, method, host, detail)
        }
    }

    /// Hands the result to the waiting caller; later calls do nothing. A streamed caller may have had the head
    /// already: its body ends here, whole or with the error.
    func resume(with result: Result<HTTPResponse, HTTPClientError>) {
        continuation?.resume(returning: result)
        continuation = nil
        if let sink { sink.finish(result) }
    }

    /// Frees the easy handle and everything it pointed at. The handle must already be out of the multi handle.
    func close() {
        precondition(continuation == nil, "a transfer was closed before its caller was answered")
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        headerList = nil
        requestBody = nil
        errorBuffer.deallocate()
    }

    private func set(_ option: CURLoption, _ value: Int) throws(HTTPClientError) {
        try check(carbscan_curl_easy_setopt_long(easy, option, value))
    }

    private func set(_ option: CURLoption, string: String) throws(HTTPClientError) {
        try check(string.withCString { carbscan_curl_easy_setopt_pointer(easy, option, $0) })  // libcurl copies strings
    }

    private func set(_ option: CURLoption, pointer: UnsafeRawPointer?) throws(HTTPClientError) {
        try check(carbscan_curl_easy_setopt_pointer(easy, option, pointer))
    }

    private func check(_ code: CURLcode) throws(HTTPClientError) {
        guard code != CURLE_OK else { return }
        let kind: HTTPClientError.Code = code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL ? .invalidURL : .invalidRequest
        throw HTTPClientError(kind, method, host, String(cString: curl_easy_strerror(code)))
    }
}

extension HTTPRequest.Method {
    /// These send `Content-Length: 0` rather than no body, which some servers answer with 411.
    var alwaysHasBody: Bool { self == .post || self == .put || self == .patch }
}

extension Duration {
    /// Whole milliseconds for a libcurl timeout, at least 1: libcurl reads 0 as "no timeout".
    var curlMilliseconds: Int { max(1, Int(milliseconds)) }
}

extension String {
    /// An RFC 9110 token: no spaces, colons or control characters.
    fileprivate var isValidHeaderName: Bool {
        !isEmpty && utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }
    }

    /// No CR, LF or NUL, which would let a value start a new header or end the request head.
    fileprivate var isValidHeaderValue: Bool {
        !utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
    }
}
