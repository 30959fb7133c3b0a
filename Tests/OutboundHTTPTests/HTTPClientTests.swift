import Foundation
import OutboundHTTP
import Testing

/// Expects `body` to throw an ``HTTPClientError`` and returns it.
func expectClientError(
    _ body: () async throws(HTTPClientError) -> HTTPResponse, sourceLocation: SourceLocation = #_sourceLocation
) async -> HTTPClientError? {
    do {
        let response = try await body()
        Issue.record("expected an HTTPClientError, got status \(response.status)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// The outcome of `body` as a value, so a task can carry the typed error.
func capture(_ body: () async throws(HTTPClientError) -> HTTPResponse) async -> Result<HTTPResponse, HTTPClientError> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}

struct HTTPClientTests {
    @Test func getRoundTrip() async throws {
        try await TestServer.with { server in
            let client = HTTPClient(options: .init(userAgent: "carbscan-test/1"))
            defer { client.shutdown() }
            let response = try await client.send(
                HTTPRequest(url: server.url("/echo?x=1"), headers: [(name: "X-Test", value: "hello there")]))
            #expect(response.status == 200)
            #expect(response.outcome == .success)
            #expect(response.header("X-Method") == "GET")
            #expect(response.header("X-Got-Test") == "hello there")
            #expect(response.header("X-Got-User-Agent") == "carbscan-test/1")
            #expect(response.header("X-Got-Content-Length") == "absent")
            #expect(response.body.isEmpty)
        }
    }

    @Test func responseHeaderLookupIsCaseInsensitive() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let response = try await client.send(HTTPRequest(url: server.url("/echo")))
            #expect(response.header("x-method") == "GET")
            #expect(response.header("X-METHOD") == "GET")
            #expect(response.header("X-Not-There") == nil)
        }
    }

    @Test func postSendsBinaryBodyWithZeroBytes() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let body: [UInt8] = [0, 1, 0, 0xFF, 0, 0x0D, 0x0A, 0]
            let response = try await client.send(
                HTTPRequest(
                    method: .post, url: server.url("/echo"), headers: [(name: "Content-Type", value: "application/octet-stream")],
                    body: body))
            #expect(response.header("X-Method") == "POST")
            #expect(response.header("X-Got-Content-Length") == "8")
            #expect(response.header("X-Got-Content-Type") == "application/octet-stream")
            #expect(response.body == body)
        }
    }

    /// One body sent by several requests at once, shared and never copied: each sends the same bytes, and the body
    /// is still whole afterwards (libcurl only reads it).
    @Test func aSharedBodyIsSentWholeByEveryRequestThatCarriesIt() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let text = String(repeating: "é0123456789", count: 4_000)
            let body = HTTPRequestBody(utf8: text)
            #expect(body.count == text.utf8.count)
            let responses = try await withThrowingTaskGroup(of: HTTPResponse.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await client.send(HTTPRequest(method: .post, url: server.url("/echo"), sharing: body)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(responses.count == 8)
            for response in responses { #expect(response.body == Array(text.utf8)) }
            #expect(body.bytes == Array(text.utf8))
            #expect(HTTPRequestBody([]).count == 0)
        }
    }

    @Test func postWithoutBodyOrContentTypeSendsEmptyBodyAndNoFormType() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let response = try await client.send(HTTPRequest(method: .post, url: server.url("/echo")))
            #expect(response.header("X-Got-Content-Length") == "0")
            // libcurl's default would be application/x-www-form-urlencoded.
            #expect(response.header("X-Got-Content-Type") == "absent")
            #expect(response.body.isEmpty)
        }
    }

    @Test(arguments: [HTTPRequest.Method.put, .patch, .delete])
    func otherMethodsKeepTheirVerbAndBody(_ method: HTTPRequest.Method) async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let body = Array("{\"n\":1}".utf8)
            let response = try await client.send(HTTPRequest(method: method, url: server.url("/echo"), body: body))
            #expect(response.header("X-Method") == method.rawValue)
            #expect(response.body == body)
        }
    }

    @Test(arguments: [(404, HTTPOutcome.permanent), (429, .retryable), (500, .retryable)])
    func errorStatusesAreReturnedNotThrown(_ status: Int, _ outcome: HTTPOutcome) async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let response = try await client.send(HTTPRequest(url: server.url("/status/\(status)")))
            #expect(response.status == status)
            #expect(response.outcome == outcome)
            #expect(response.body == Array("status \(status)".utf8))
        }
    }

    @Test func retryAfterFromTheServer() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let seconds = try await client.send(HTTPRequest(url: server.url("/status/429?retryAfter=7")))
            #expect(seconds.retryAfter() == .seconds(7))
            let now = Date(timeIntervalSince1970: 1_700_000_000)  // 2023-11-14T22:13:20Z
            let dated = try await client.send(
                HTTPRequest(url: server.url("/status/503?retryAfter=Tue,%2014%20Nov%202023%2022:15:20%20GMT")))
            #expect(dated.header("Retry-After") == "Tue, 14 Nov 2023 22:15:20 GMT")
            #expect(dated.retryAfter(now: now) == .seconds(120))
        }
    }

    @Test func redirectsAreReturnedNotFollowed() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let response = try await client.send(HTTPRequest(url: server.url("/redirect")))
            #expect(response.status == 302)
            #expect(response.header("Location") == "/echo")
            #expect(response.header("X-Method") == nil)
        }
    }

    @Test func slowHandlerPastTotalTimeoutTimesOutPromptly() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()  // default total timeout 30 s: the per-request one must win
            defer { client.shutdown() }
            let started = ContinuousClock.now
            let error = await expectClientError { () throws(HTTPClientError) in
                try await client.send(HTTPRequest(url: server.url("/slow?ms=5000")), totalTimeout: .milliseconds(300))
            }
            #expect(error?.code == .timeout)
            #expect(error?.outcome == .retryable)
            // Without the per-request timeout the answer comes after 5 s; the bound leaves room for a loaded run.
            #expect(ContinuousClock.now - started < .seconds(4))
        }
    }

    @Test func bodyAtTheCapIsAccepted() async throws {
        try await TestServer.with { server in
            let client = HTTPClient(options: .init(maxResponseBytes: 100_000))
            defer { client.shutdown() }
            let response = try await client.send(HTTPRequest(url: server.url("/bytes?count=100000")))
            #expect(response.body.count == 100_000)
        }
    }

    /// A HEAD answer announces the length of a body it does not carry: that must not count against the cap.
    @Test func headIgnoresTheAnnouncedLength() async throws {
        try await TestServer.with { server in
            let client = HTTPClient(options: .init(maxResponseBytes: 1000))
            defer { client.shutdown() }
            let response = try await client.send(HTTPRequest(method: .head, url: server.url("/bytes?count=5000")))
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == "5000")
            #expect(response.body.isEmpty)
        }
    }

    @Test func bodyOverTheCapWithContentLengthIsRefused() async throws {
        try await TestServer.with { server in
            let client = HTTPClient(options: .init(maxResponseBytes: 100_000))
            defer { client.shutdown() }
            let error = await expectClientError { () throws(HTTPClientError) in
                try await client.send(HTTPRequest(url: server.url("/bytes?count=100001")))
            }
            #expect(error?.code == .responseTooLarge)
            #expect(error?.outcome == .permanent)
        }
    }

    /// The server announces 64 MiB, sends 1 KiB and stalls: only refusing on `Content-Length` answers before the stall ends.
    @Test func announcedContentLengthOverTheCapIsRefusedBeforeTheBody() async throws {
        try await TestServer.with { server in
            let client = HTTPClient(options: .init(maxResponseBytes: 1 << 20))
            defer { client.shutdown() }
            let started = ContinuousClock.now
            let error = await expectClientError { () throws(HTTPClientError) in
                try await client.send(HTTPRequest(url: server.url("/announce?length=\(64 << 20)")), totalTimeout: .seconds(8))
            }
            #expect(error?.code == .responseTooLarge)
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    /// 2,000 chunks of 64 KiB, 10 ms apart (over 20 s in all), without `Content-Length`: the transfer must stop once
    /// 256 KiB have arrived (a few chunks in; the bound is wide so a loaded machine cannot fail it).
    @Test func streamedBodyOverTheCapIsAbortedMidway() async throws {
        try await TestServer.with { server in
            let client = HTTPClient(options: .init(maxResponseBytes: 256 << 10))
            defer { client.shutdown() }
            let started = ContinuousClock.now
            let error = await expectClientError { () throws(HTTPClientError) in
                try await client.send(HTTPRequest(url: server.url("/stream?chunks=2000&size=65536&delayMs=10")))
            }
            #expect(error?.code == .responseTooLarge)
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }

    @Test func streamedBodyUnderTheCapArrivesWhole() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let response = try await client.send(HTTPRequest(url: server.url("/stream?chunks=20&size=10000")))
            #expect(response.header("Content-Length") == nil)
            #expect(response.body == [UInt8](repeating: 0x62, count: 200_000))
        }
    }

    @Test func connectionRefused() async throws {
        let closed = try ClosedPort()
        let client = HTTPClient()
        defer { client.shutdown() }
        let error = await expectClientError { () throws(HTTPClientError) in
            try await client.send(HTTPRequest(url: "http://127.0.0.1:\(closed.port)/x"))
        }
        #expect(error?.code == .connect)
        #expect(error?.outcome == .retryable)
        #expect(error?.message.contains("127.0.0.1") == true)
    }

    @Test func connectTimeoutTimesOutPromptly() async throws {
        let stalled = try StalledPort()
        // A client-wide connect timeout of 60 s: the per-request 300 ms must win. The bound is wide (a loaded CI run
        // once took 3.1 s) and still far below what the client-wide timeout would take.
        let client = HTTPClient(options: .init(connectTimeout: .seconds(60)))
        defer { client.shutdown() }
        let started = ContinuousClock.now
        let error = await expectClientError { () throws(HTTPClientError) in
            try await client.send(HTTPRequest(url: "http://127.0.0.1:\(stalled.port)/x"), connectTimeout: .milliseconds(300))
        }
        #expect(error?.code == .timeout)
        #expect(error?.outcome == .retryable)
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test(arguments: ["not a url", "ftp://127.0.0.1/file", "http://", "/relative/path", "http://exa mple.com/?apikey=SECRET"])
    func invalidURL(_ url: String) async throws {
        let client = HTTPClient()
        defer { client.shutdown() }
        let error = await expectClientError { () throws(HTTPClientError) in try await client.send(HTTPRequest(url: url)) }
        #expect(error?.code == .invalidURL)
        #expect(error?.outcome == .permanent)
        #expect(error?.message.contains("SECRET") == false)
    }

    @Test func headerInjectionIsRefused() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let error = await expectClientError { () throws(HTTPClientError) in
                try await client.send(HTTPRequest(url: server.url("/echo"), headers: [(name: "X-Test", value: "a\r\nX-Evil: 1")]))
            }
            #expect(error?.code == .invalidRequest)
        }
    }

    @Test func errorMessagesNameTheHostNotTheQuery() async throws {
        let closed = try ClosedPort()
        let client = HTTPClient()
        defer { client.shutdown() }
        let error = await expectClientError { () throws(HTTPClientError) in
            try await client.send(HTTPRequest(url: "http://localhost:\(closed.port)/v1/items?apikey=SECRET"))
        }
        #expect(error?.message.contains("localhost") == true)
        #expect(error?.message.contains("SECRET") == false)
        #expect(error?.message.contains("/v1/items") == false)
    }

    @Test func tlsCertificatesAreVerified() async throws {
        let server = try await SelfSignedTLSServer.start()
        let client = HTTPClient()
        defer { client.shutdown() }
        let error = await expectClientError { () throws(HTTPClientError) in
            try await client.send(HTTPRequest(url: "https://localhost:\(server.port)/"))
        }
        #expect(error?.code == .tls)
    }

    @Test func tlsToAPlainHTTPServerFails() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let error = await expectClientError { () throws(HTTPClientError) in
                try await client.send(HTTPRequest(url: "https://127.0.0.1:\(server.port)/echo"))
            }
            #expect(error?.code == .tls)
        }
    }
}
