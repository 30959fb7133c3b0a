import OutboundHTTP
import Synchronization
import Testing

/// `HTTPClient.stream`: the head first, then the body as the server writes it, under the same limits as `send`.
struct HTTPClientStreamTests {
    /// Records every call the client reports, as `/metrics` would count them.
    final class Calls: HTTPClientObserver {
        let calls = Mutex<[(status: Int?, error: HTTPClientError.Code?)]>([])
        var all: [(status: Int?, error: HTTPClientError.Code?)] { calls.withLock { $0 } }

        func requestFinished(provider: String, status: Int?, error: HTTPClientError.Code?, duration: Duration) {
            calls.withLock { $0.append((status, error)) }
        }
        func rateLimitWaited(provider: String) {}
    }

    private func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        try #require(condition())
    }

    /// The server writes `first`, then holds the response open until released: the chunk must reach the reader
    /// while it does (a client that buffered the body would hand nothing over before the end).
    @Test func chunksArriveBeforeTheResponseEnds() async throws {
        try await TestServer.with { server in
            let calls = Calls()
            let client = HTTPClient(observer: calls)
            defer { client.shutdown() }
            let response = try await client.stream(HTTPRequest(url: server.url("/hold?first=first")))
            #expect(response.status == 200)
            #expect(response.header("content-type") == "text/plain")
            var chunks = response.body.makeAsyncIterator()
            let first = try await chunks.next()
            #expect(first.map { String(decoding: $0, as: UTF8.self) } == "first")
            #expect(!server.stats.holdFinished)
            server.stats.release()
            var rest: [UInt8] = []
            while let chunk = try await chunks.next() { rest += chunk }
            #expect(String(decoding: rest, as: UTF8.self) == "rest")
            // One call, reported once the body ended (by the transfer's thread, which may come just after the reader
            // saw the end: a loaded CI run checked too soon).
            try await eventually { calls.all.count == 1 }
            #expect(calls.all.first?.status == 200)
        }
    }

    /// The status and headers come back while the server has not written a byte of the body.
    @Test func theHeadArrivesBeforeTheBody() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let response = try await client.stream(HTTPRequest(url: server.url("/hold")))
            #expect(response.status == 200)
            #expect(!server.stats.holdFinished)
            server.stats.release()
            #expect(String(decoding: try await response.body.collect(), as: UTF8.self) == "rest")
        }
    }

    @Test func anErrorStatusIsAResponseWithItsBody() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let response = try await client.stream(HTTPRequest(url: server.url("/status/429?retryAfter=3"))).collect()
            #expect(response.status == 429)
            #expect(response.retryAfter() == .seconds(3))
            #expect(String(decoding: response.body, as: UTF8.self) == "status 429")
        }
    }

    /// 2,000 chunks of 64 KiB without `Content-Length`: the body throws once 256 KiB are passed, the reader having
    /// been handed no more than that.
    @Test func aBodyOverTheCapThrowsMidway() async throws {
        try await TestServer.with { server in
            let calls = Calls()
            let client = HTTPClient(options: .init(maxResponseBytes: 256 << 10), observer: calls)
            defer { client.shutdown() }
            let response = try await client.stream(HTTPRequest(url: server.url("/stream?chunks=2000&size=65536&delayMs=10")))
            var received = 0
            do throws(HTTPClientError) {
                for try await chunk in response.body { received += chunk.count }
                Issue.record("the whole body arrived")
            } catch {
                #expect(error.code == .responseTooLarge)
            }
            #expect(received <= 256 << 10)
            #expect(calls.all.map(\.error) == [.responseTooLarge])
        }
    }

    /// Cancelling the task that reads the body aborts the transfer: the server's next write fails.
    @Test func cancellingTheReaderAbortsTheTransfer() async throws {
        try await TestServer.with { server in
            let calls = Calls()
            let client = HTTPClient(observer: calls)
            defer { client.shutdown() }
            let started = Mutex(false)
            let reader = Task { () async -> Result<Int, HTTPClientError> in
                do throws(HTTPClientError) {
                    let response = try await client.stream(HTTPRequest(url: server.url("/stream?chunks=3000&size=1024&delayMs=10")))
                    var received = 0
                    for try await chunk in response.body {
                        received += chunk.count
                        started.withLock { $0 = true }
                    }
                    return .success(received)
                } catch {
                    return .failure(error)
                }
            }
            try await eventually { started.withLock { $0 } }
            reader.cancel()
            let result = await reader.value
            guard case .failure(let error) = result else {
                Issue.record("the body was read to its end: \(result)")
                return
            }
            #expect(error.code == .cancelled)
            try await eventually { server.stats.streamsAborted == 1 }
            #expect(calls.all.map(\.error) == [.cancelled])
            // The client is still usable afterwards.
            #expect(try await client.send(HTTPRequest(url: server.url("/echo"))).status == 200)
        }
    }

    /// A body dropped unread aborts its transfer too.
    @Test func droppingTheBodyAbortsTheTransfer() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            do {
                let response = try await client.stream(HTTPRequest(url: server.url("/stream?chunks=3000&size=1024&delayMs=10")))
                #expect(response.status == 200)
            }
            try await eventually { server.stats.streamsAborted == 1 }
        }
    }

    @Test func aConnectionClosedMidBodyThrows() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let response = try await client.stream(HTTPRequest(url: server.url("/broken?chunks=4")))
            var received = 0
            do throws(HTTPClientError) {
                for try await chunk in response.body { received += chunk.count }
                Issue.record("a broken body ended as if whole (\(received) bytes)")
            } catch {
                #expect(error.code == .transport)
            }
        }
    }

    /// The total timeout covers the body: 100 chunks 100 ms apart cannot arrive within 500 ms.
    @Test func theTotalTimeoutCoversTheBody() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let response = try await client.stream(
                HTTPRequest(url: server.url("/stream?chunks=100&size=10&delayMs=100")), totalTimeout: .milliseconds(500))
            do throws(HTTPClientError) {
                _ = try await response.body.collect()
                Issue.record("the body outlived the total timeout")
            } catch {
                #expect(error.code == .timeout)
            }
        }
    }

    @Test func aRefusedConnectionThrowsBeforeAnyHead() async throws {
        let calls = Calls()
        let client = HTTPClient(observer: calls)
        defer { client.shutdown() }
        do throws(HTTPClientError) {
            _ = try await client.stream(HTTPRequest(url: "http://127.0.0.1:1/"))
            Issue.record("a response from a closed port")
        } catch {
            #expect(error.code == .connect)
        }
        #expect(calls.all.map(\.error) == [.connect])
    }

    /// Over HTTP/2 (as providers answer over HTTPS), server-sent events as they come: the first is read while the
    /// peer holds the rest back.
    @Test func eventsArriveOverHTTP2BeforeTheResponseEnds() async throws {
        let peer = try await H2Peer.start()
        let client = HTTPClient(options: .init(caBundlePath: peer.caBundlePath))
        defer { client.shutdown() }
        let response = try await client.stream(HTTPRequest(url: peer.tlsURL("/events?n=3")))
        #expect(response.status == 200)
        #expect(response.header("content-type") == "text/event-stream")
        var parser = ServerSentEventParser()
        var events: [ServerSentEvent] = []
        var released = false
        for try await chunk in response.body {
            events += parser.feed(chunk)
            if !released, !events.isEmpty {
                #expect(try await peer.stats(client).eventsFinished == 0)
                _ = try await client.send(HTTPRequest(url: peer.clearURL("/release")))
                released = true
            }
        }
        #expect(events.map(\.data) == ["1", "2", "3"])
        #expect(try await peer.stats(client).eventsFinished == 1)
    }
}
