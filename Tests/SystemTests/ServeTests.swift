import Foundation
import Postgres
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `carbscan migrate` and `carbscan serve` as operators run them, on a database of their own.
@Suite struct ServeTests {
    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        try await withScratchDatabase { url in
            let results = try await withThrowingTaskGroup(of: (Int32, String).self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        let result = try await CarbScanBinary.run(["migrate"], environment: ["DATABASE_URL": url])
                        return (result.status, result.stdout)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0.0 == 0 })
            // Exactly one starter applied the migrations; the others found nothing to do.
            #expect(results.filter { $0.1.contains("applied") }.count == 1)
            #expect(results.filter { $0.1.contains("nothing to apply") }.count == 2)
            let status = try await CarbScanBinary.run(["migrate", "--status"], environment: ["DATABASE_URL": url])
            let lines = status.stdout.split(separator: "\n")
            #expect(lines.count >= 2)
            #expect(lines.allSatisfy { !$0.hasSuffix("pending") })
        }
    }

    @Test func productionRefusesToStartWithoutJWTSecret() async throws {
        let result = try await CarbScanBinary.run(
            ["serve", "--port", String(CarbScanBinary.freePort())], environment: ["CARBSCAN_ENV": "production", "JWT_SECRET": ""])
        #expect(result.status == 78)
        #expect(result.stderr.contains("JWT_SECRET"))
        let short = try await CarbScanBinary.run(
            ["serve", "--port", String(CarbScanBinary.freePort())], environment: ["JWT_SECRET": "too short"])
        #expect(short.status == 78)
        #expect(short.stderr.contains("at least 32 bytes"))
    }

    @Test func serveMigratesAnswersHealthAndStopsOnSIGTERM() async throws {
        try await withScratchDatabase { url in
            let port = CarbScanBinary.freePort()
            let server = try CarbScanBinary.start(
                ["serve", "--port", String(port), "--migrate"],
                environment: ["DATABASE_URL": url, "JWT_SECRET": String(repeating: "s", count: 40)])
            var health: (Int, String)?
            for _ in 0..<300 where health == nil {
                try await Task.sleep(for: .milliseconds(50))
                guard
                    let (data, response) = try? await URLSession.shared.data(
                        from: URL(string: "http://127.0.0.1:\(port)/api/mobile/v1/health")!)
                else { continue }
                health = ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
            }
            let answer = try #require(health, "no answer; log: \(server.output)")
            #expect(answer.0 == 200)
            #expect(answer.1.contains(#""status":"healthy""#))
            // Idle, it exits in about 0.01 s (its event subscriber used to hold it 4–6 s; the bound allows a loaded run).
            let signalled = ContinuousClock.now
            server.signal(SIGTERM)
            #expect(await server.waitForExit(timeout: .seconds(10)) == 0)
            #expect(ContinuousClock.now - signalled < .seconds(3), "exit took \(ContinuousClock.now - signalled)")
            #expect(!server.output.contains(#""level":"error""#), "\(server.output)")
        }
    }

    /// SIGTERM while a client long-polls a job that will not finish (no worker runs): it gets the job as it stands at
    /// once, and the process exits, instead of holding the shutdown for the poll's 20 s.
    @Test func sigtermAnswersPendingLongPollsAndExits() async throws {
        try await withScratchDatabase { url in
            let port = CarbScanBinary.freePort()
            let server = try CarbScanBinary.start(
                ["serve", "--port", String(port), "--migrate"],
                environment: ["DATABASE_URL": url, "JWT_SECRET": String(repeating: "s", count: 40)])
            defer { server.signal(SIGKILL) }
            let api = ServeClient(port: port, preferAsync: true)
            #expect(try await eventually(timeout: .seconds(30)) { (try? await api.call("GET", "health"))?.0 == 200 })
            let (_, session) = try await api.call(
                "POST", "auth/register", json: #"{"email":"poll@example.com","password":"correct horse"}"#)
            let token = try #require(session["accessToken"] as? String)
            let (accepted, job) = try await api.call("POST", "chat", token: token, json: #"{"message":"Carbs in rice?"}"#)
            #expect(accepted == 202)
            let jobID = try #require(job["jobId"] as? String)
            let poll = Task { () -> (Int, String?) in
                let (status, data) = try await api.call("GET", "jobs/\(jobID)?wait=20", token: token)
                return (status, data["status"] as? String)
            }
            try await Task.sleep(for: .milliseconds(700))
            let signalled = ContinuousClock.now
            server.signal(SIGTERM)
            let (status, polled) = try await poll.value
            #expect(status == 200 && polled == "queued", "\(status) \(polled ?? "-")")
            #expect(await server.waitForExit(timeout: .seconds(10)) == 0)
            #expect(ContinuousClock.now - signalled < .seconds(8), "took \(ContinuousClock.now - signalled)")
        }
    }

    /// A job's event stream outlives `HTTP_IDLE_TIMEOUT_SECONDS` (its heartbeats keep it, and proxies, going); SIGTERM
    /// ends it cleanly (a whole chunked response, curl exits 0) and the process exits; a client that reconnects to
    /// another `serve` with `Last-Event-ID` gets nothing twice.
    @Test func anEventStreamOutlivesTheIdleTimeoutAndEndsCleanlyOnSIGTERM() async throws {
        try await withScratchDatabase { url in
            let environment = [
                "DATABASE_URL": url, "JWT_SECRET": String(repeating: "s", count: 40), "HTTP_IDLE_TIMEOUT_SECONDS": "1",
                "EVENT_STREAM_HEARTBEAT_SECONDS": "0.3", "CARBSCAN_PREFIX": "sse-\(UUID().uuidString.prefix(8))",
            ]
            let port = CarbScanBinary.freePort()
            let server = try CarbScanBinary.start(["serve", "--port", String(port), "--migrate"], environment: environment)
            defer { server.signal(SIGKILL) }
            let api = ServeClient(port: port, preferAsync: true)
            #expect(try await eventually(timeout: .seconds(30)) { (try? await api.call("GET", "health"))?.0 == 200 })
            let (_, session) = try await api.call(
                "POST", "auth/register", json: #"{"email":"stream@example.com","password":"correct horse"}"#)
            let token = try #require(session["accessToken"] as? String)
            let (accepted, job) = try await api.call("POST", "chat", token: token, json: #"{"message":"Carbs in rice?"}"#)
            #expect(accepted == 202)
            let jobID = try #require(job["jobId"] as? String)
            let stream = try EventStreamClient(api.base + "jobs/\(jobID)/events", token: token)
            defer { stream.stop() }
            // Three idle timeouts pass: the stream is still open, beating.
            try await Task.sleep(for: .seconds(3))
            #expect(!stream.ended && stream.comments.count >= 5, "\(stream.text)")
            #expect(stream.events.map(\.name) == ["queued"])
            let signalled = ContinuousClock.now
            server.signal(SIGTERM)
            #expect(try await stream.waitForEnd(timeout: .seconds(10)))
            #expect(stream.statusLine?.hasPrefix("200 ") == true, "curl saw a cut response: \(stream.text)")
            #expect(await server.waitForExit(timeout: .seconds(10)) == 0)
            #expect(ContinuousClock.now - signalled < .seconds(8))

            let other = CarbScanBinary.freePort()
            let second = try CarbScanBinary.start(["serve", "--port", String(other)], environment: environment)
            defer { second.signal(SIGKILL) }
            let secondAPI = ServeClient(port: other)
            #expect(try await eventually(timeout: .seconds(30)) { (try? await secondAPI.call("GET", "health"))?.0 == 200 })
            let lastID = try #require(stream.events.last?.id)
            let resumed = try EventStreamClient(
                secondAPI.base + "jobs/\(jobID)/events", token: token, headers: ["Last-Event-ID": lastID], maxTime: 2)
            #expect(try await resumed.waitForEnd())
            #expect(resumed.events.isEmpty && resumed.comments.count >= 3, "\(resumed.text)")
        }
    }

    /// Abusive clients: a connection that sends its headers a few bytes at a time, one that stops in the middle of its
    /// body and one left idle after a request are closed after HTTP_IDLE_TIMEOUT_SECONDS, while others are answered.
    @Test func slowAndIdleConnectionsAreClosedAfterTheIdleTimeout() async throws {
        try await withScratchDatabase { url in
            let port = CarbScanBinary.freePort()
            let server = try CarbScanBinary.start(
                ["serve", "--port", String(port), "--migrate"],
                environment: ["DATABASE_URL": url, "JWT_SECRET": String(repeating: "s", count: 40), "HTTP_IDLE_TIMEOUT_SECONDS": "1"])
            defer { server.signal(SIGKILL) }
            #expect(try await eventually(timeout: .seconds(30)) { RawConnection(port: port)?.request("GET /api/mobile/v1/health") != nil })
            let trickling = try #require(RawConnection(port: port))
            let stalled = try #require(RawConnection(port: port))
            let idle = try #require(RawConnection(port: port))
            stalled.send(
                "POST /api/mobile/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"em")
            #expect(idle.request("GET /api/mobile/v1/config")?.hasPrefix("HTTP/1.1 200") == true)
            // A header line every 300 ms, never a whole header block: each resets nothing, so the connection is closed
            // while it still trickles. Were each byte to count, it would stay open for as long as it trickled (10 s,
            // room for a loaded run, which once took 6.6 s for what takes 2.5 s idle).
            var sent = 0
            trickling.send("GET /api/mobile/v1/health HTTP/1.1\r\nHost: x\r\n")
            while !trickling.isClosed, sent < 33 {
                try await Task.sleep(for: .milliseconds(300))
                trickling.send("X-\(sent): \(sent)\r\n")
                sent += 1
            }
            #expect(trickling.isClosed, "open after trickling \(sent) header lines")
            // Meanwhile another client is answered at once.
            #expect(RawConnection(port: port)?.request("GET /api/mobile/v1/config")?.hasPrefix("HTTP/1.1 200") == true)
            for connection in [stalled, idle] { #expect(connection.waitForClose(timeout: 10), "still open") }
        }
    }
}

/// A plain TCP client, to play a misbehaving HTTP client.
final class RawConnection: @unchecked Sendable {
    // Used by one test task at a time; the descriptor is closed once, in deinit.
    let fd: Int32

    init?(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 {
            close(fd)
            return nil
        }
    }

    deinit { close(fd) }

    func send(_ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.send(fd, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends a whole request (keep-alive) and returns the first bytes of the answer.
    func request(_ line: String) -> String? {
        send("\(line) HTTP/1.1\r\nHost: x\r\n\r\n")
        var buffer = [UInt8](repeating: 0, count: 4096)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// True when the server has closed the connection: a read that does not wait finds end of file.
    var isClosed: Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 || (count < 0 && errno == ECONNRESET) { return true }
            if count < 0 { return false }
        }
    }

    /// True once the server has closed the connection (a read returns end of file) within `timeout` seconds.
    func waitForClose(timeout seconds: Int) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 || (count < 0 && errno == ECONNRESET) { return true }
            if count < 0 { return false }
        }
    }
}
