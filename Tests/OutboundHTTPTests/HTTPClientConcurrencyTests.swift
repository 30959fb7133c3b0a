import OutboundHTTP
import Testing

struct HTTPClientConcurrencyTests {
    /// Waits, without blocking a thread, until `condition` holds (at most ~5 s).
    private func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() {
            try await Task.sleep(for: .milliseconds(10))
        }
        try #require(condition())
    }

    @Test func hundredConcurrentRequestsEachGetTheirOwnAnswer() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let bodies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for n in 0..<100 {
                    group.addTask {
                        let response = try await client.send(HTTPRequest(url: server.url("/id/\(n)")))
                        return (n, String(decoding: response.body, as: UTF8.self))
                    }
                }
                return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
            }
            #expect(bodies.count == 100)
            for n in 0..<100 { #expect(bodies[n] == "\(n)") }
            // Each answer takes 100 ms: had the client run them one after another, the server would see one at a time.
            #expect(server.stats.maxInFlight >= 10)
        }
    }

    @Test func sequentialRequestsReuseTheConnection() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let first = try await client.send(HTTPRequest(url: server.url("/client-port")))
            let second = try await client.send(HTTPRequest(url: server.url("/client-port")))
            let firstPort = Int(String(decoding: first.body, as: UTF8.self))
            #expect(firstPort != nil)
            #expect(firstPort == Int(String(decoding: second.body, as: UTF8.self)))
        }
    }

    @Test func cancellingTheTaskAbortsAnInFlightRequestPromptly() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let task = Task {
                await capture { () throws(HTTPClientError) in try await client.send(HTTPRequest(url: server.url("/slow?ms=5000"))) }
            }
            try await eventually { server.stats.slowStarted == 1 }
            let cancelled = ContinuousClock.now
            task.cancel()
            let result = await task.value
            // The request would run 5 s; a loaded run needs more than 2 s for the abort to come back (bound 4 s).
            #expect(ContinuousClock.now - cancelled < .seconds(4))
            guard case .failure(let error) = result else {
                Issue.record("expected .cancelled, got \(result)")
                return
            }
            #expect(error.code == .cancelled)
            // The client is still usable afterwards.
            #expect(try await client.send(HTTPRequest(url: server.url("/echo"))).status == 200)
        }
    }

    @Test func aTaskCancelledBeforeSendingFailsAtOnce() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            defer { client.shutdown() }
            let task = Task {
                while !Task.isCancelled { await Task.yield() }
                return await capture { () throws(HTTPClientError) in try await client.send(HTTPRequest(url: server.url("/slow?ms=5000"))) }
            }
            task.cancel()
            guard case .failure(let error) = await task.value else {
                Issue.record("expected .cancelled")
                return
            }
            #expect(error.code == .cancelled)
            #expect(server.stats.slowStarted == 0)
        }
    }

    @Test func shutdownFailsInFlightRequestsAndRefusesNewOnes() async throws {
        try await TestServer.with { server in
            let client = HTTPClient()
            let tasks = (0..<3).map { _ in
                Task {
                    await capture { () throws(HTTPClientError) in try await client.send(HTTPRequest(url: server.url("/slow?ms=5000"))) }
                }
            }
            try await eventually { server.stats.slowStarted == 3 }
            let shutdownAt = ContinuousClock.now
            client.shutdown()
            for task in tasks {
                guard case .failure(let error) = await task.value else {
                    Issue.record("expected .shutdown")
                    continue
                }
                #expect(error.code == .shutdown)
            }
            #expect(ContinuousClock.now - shutdownAt < .seconds(4))
            let error = await expectClientError { () throws(HTTPClientError) in try await client.send(HTTPRequest(url: server.url("/echo")))
            }
            #expect(error?.code == .shutdown)
        }
    }
}
