/// One outbound HTTP request, sent from memory.
package struct HTTPRequest: Sendable {
    package enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
        case put = "PUT"
        case patch = "PATCH"
        case delete = "DELETE"
        case head = "HEAD"
    }

    package var method: Method
    /// An absolute `http` or `https` URL.
    package var url: String
    /// Sent in order. A header the caller sets replaces libcurl's own (`Content-Type`, `Expect`, `User-Agent`).
    package var headers: [(name: String, value: String)]
    /// `nil` sends no body for GET/HEAD/DELETE; POST/PUT/PATCH always send one (`Content-Length: 0` when empty).
    package var body: HTTPRequestBody?
    /// Who the call goes to, as `/metrics` names it: a short fixed name (`ai`, `stripe`), never taken from input.
    package var provider: String

    package init(
        method: Method = .get, url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil,
        provider: String = "other"
    ) {
        self.init(method: method, url: url, headers: headers, sharing: body.map(HTTPRequestBody.init), provider: provider)
    }

    /// A request whose body is `body` itself, not a copy: see ``HTTPRequestBody``.
    package init(
        method: Method = .get, url: String, headers: [(name: String, value: String)] = [], sharing body: HTTPRequestBody?,
        provider: String = "other"
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.provider = provider
    }
}
