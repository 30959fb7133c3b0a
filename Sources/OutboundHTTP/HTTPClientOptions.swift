/// Settings shared by every request of one ``HTTPClient``.
package struct HTTPClientOptions: Sendable {
    /// Time allowed for DNS, TCP and TLS set-up.
    package var connectTimeout: Duration
    /// Time allowed for the whole exchange, connection included, and also any time the request spends queued for a
    /// connection (see ``maxConnectionsPerHost``).
    package var totalTimeout: Duration
    /// A response body larger than this fails with ``HTTPClientError/Code/responseTooLarge``; the transfer is aborted
    /// as soon as the limit is passed, or before the body when `Content-Length` announces it.
    package var maxResponseBytes: Int
    package var userAgent: String
    /// The most connections open at once to one host and port, 0 for no limit. An HTTP/1.1 connection carries one
    /// request at a time; an HTTP/2 one up to ``maxStreamsPerConnection``. Requests past the limit wait inside the
    /// client for a connection, and that wait counts against their ``totalTimeout``.
    ///
    /// The default, 256, carries 25,600 requests at once to an HTTP/2 provider that allows 100 streams per connection
    /// (common front ends allow 100–256), past the 10,000 in flight one worker is sized for, while an HTTP/1.1 server
    /// (a local model server) is never sent more than 256 connections; requests past that would have waited in its
    /// accept queue or for one of its few slots anyway, their timeout running just the same.
    ///
    /// From 1,024 on the client keeps its connections in several caches (one per 512, at most 16: see
    /// ``HTTPClient/connectionCaches``), each allowed an equal share of this limit rounded up: together they may open
    /// a few more than it, at most one per cache past the first.
    package var maxConnectionsPerHost: Int
    /// The most requests carried at once by one HTTP/2 connection; the server's `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// lowers it. Past it, another connection is opened (up to ``maxConnectionsPerHost``).
    package var maxStreamsPerConnection: Int
    /// A PEM file of the certificate authorities to trust for HTTPS instead of the system's bundle (a private CA, or
    /// a test's own); `nil` for the system's.
    package var caBundlePath: String?

    package init(
        connectTimeout: Duration = .seconds(5),
        totalTimeout: Duration = .seconds(30),
        maxResponseBytes: Int = 16 << 20,
        userAgent: String = "carbscan",
        maxConnectionsPerHost: Int = 256,
        maxStreamsPerConnection: Int = 100,
        caBundlePath: String? = nil
    ) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maxResponseBytes = maxResponseBytes
        self.userAgent = userAgent
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.maxStreamsPerConnection = maxStreamsPerConnection
        self.caBundlePath = caBundlePath
    }
}
