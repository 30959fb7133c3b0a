/// One outbound HTTP request, sent from memory.
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
        case put = "PUT"
        case patch = "PATCH"
        case delete = "DELETE"
        case head = "HEAD"
    }

    public var method: Method
    /// An absolute `http` or `https` URL.
    public var url: String
    /// Sent in order. A header the caller sets replaces libcurl's own (`Content-Type`, `Expect`, `User-Agent`).
    public var headers: [(name: String, value: String)]
    /// `nil` sends no body for GET/HEAD/DELETE; POST/PUT/PATCH always send one (`Content-Length: 0` when empty).
    public var body: [UInt8]?

    public init(method: Method = .get, url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}
