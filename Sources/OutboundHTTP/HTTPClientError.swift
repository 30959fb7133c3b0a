/// Why a request got no HTTP response. An HTTP error status is not one: it comes back as an ``HTTPResponse``.
package struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    package enum Code: Sendable {
        /// The URL does not parse, or its scheme is not `http`/`https`.
        case invalidURL
        /// A header name or value holds a line break or a colon where it cannot.
        case invalidRequest
        /// Name resolution failed or the peer refused the connection.
        case connect
        /// The connect or total timeout passed.
        case timeout
        /// TLS handshake or certificate verification failed.
        case tls
        /// The body passed ``HTTPClientOptions/maxResponseBytes``.
        case responseTooLarge
        /// The calling task was cancelled.
        case cancelled
        /// The client was shut down.
        case shutdown
        /// Any other network or protocol failure (connection reset, malformed response, …).
        case transport
    }

    package var code: Code
    /// Names the method and host, never the path or query (which may carry keys).
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "HTTPClientError.\(code): \(message)" }
}

extension HTTPClientError {
    /// An error whose message starts with the method and host, the most a log line may show of the URL.
    init(_ code: Code, _ method: HTTPRequest.Method, _ host: String, _ detail: String) {
        self.init(code, "\(method.rawValue) \(host): \(detail)")
    }
}
