/// Settings shared by every request of one ``HTTPClient``.
package struct HTTPClientOptions: Sendable {
    /// Time allowed for DNS, TCP and TLS set-up.
    package var connectTimeout: Duration
    /// Time allowed for the whole exchange, connection included.
    package var totalTimeout: Duration
    /// A response body larger than this fails with ``HTTPClientError/Code/responseTooLarge``; the transfer is aborted
    /// as soon as the limit is passed, or before the body when `Content-Length` announces it.
    package var maxResponseBytes: Int
    package var userAgent: String

    package init(
        connectTimeout: Duration = .seconds(5),
        totalTimeout: Duration = .seconds(30),
        maxResponseBytes: Int = 16 << 20,
        userAgent: String = "carbscan"
    ) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maxResponseBytes = maxResponseBytes
        self.userAgent = userAgent
    }
}
