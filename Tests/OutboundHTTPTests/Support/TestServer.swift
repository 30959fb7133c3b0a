import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// A live Hummingbird server on an ephemeral loopback port, with the endpoints the client tests talk to.
///
/// - `/echo` (GET, POST, PUT, PATCH, DELETE): echoes the body; `X-Method`, `X-Got-Test`, `X-Got-Content-Length`,
///   `X-Got-Content-Type` and `X-Got-User-Agent` report what arrived (`absent` when a header was missing).
/// - `/status/{code}`: that status; `?retryAfter=` adds a `Retry-After` header.
/// - `/redirect`: 302 to `/echo`.
/// - `/slow?ms=`: answers after sleeping; counts requests started in ``Stats/slowStarted``.
/// - `/bytes?count=`: that many bytes, with `Content-Length`; HEAD announces the length and sends nothing.
/// - `/stream?chunks=&size=&delayMs=`: chunked body without `Content-Length`, written chunk by chunk; a write that
///   fails (the client went away) counts in ``Stats/streamsAborted``.
/// - `/hold?first=`: the head and `first` (if any), then nothing until ``Stats/release()``, then `rest` and the end;
///   ``Stats/holdFinished`` says whether it got that far.
/// - `/broken?chunks=`: that many 1 KiB chunks, then the connection is closed without the chunked body's end.
/// - `/announce?length=`: announces `Content-Length: length`, writes 1 KiB, then stalls for 10 s.
/// - `/id/{n}`: answers `n` after 100 ms; tracks the most requests in flight at once in ``Stats/maxInFlight``.
/// - `/client-port`: the client's TCP port, showing which connection carried the request.
struct TestServer: Sendable {
    final class Stats: Sendable {
        private struct Counts {
            var slowStarted = 0
            var inFlight = 0
            var maxInFlight = 0
            var streamsAborted = 0
            var released = false
            var holdFinished = false
        }

        private let counts = Mutex(Counts())

        var slowStarted: Int { counts.withLock { $0.slowStarted } }
        var maxInFlight: Int { counts.withLock { $0.maxInFlight } }
        var streamsAborted: Int { counts.withLock { $0.streamsAborted } }
        var holdFinished: Bool { counts.withLock { $0.holdFinished } }

        func release() { counts.withLock { $0.released = true } }
        fileprivate var released: Bool { counts.withLock { $0.released } }
        fileprivate func holdFinish() { counts.withLock { $0.holdFinished = true } }
        fileprivate func streamAborted() { counts.withLock { $0.streamsAborted += 1 } }

        fileprivate func slowStart() { counts.withLock { $0.slowStarted += 1 } }

        fileprivate func enter() {
            counts.withLock {
                $0.inFlight += 1
                $0.maxInFlight = max($0.maxInFlight, $0.inFlight)
            }
        }

        fileprivate func leave() { counts.withLock { $0.inFlight -= 1 } }
    }

    let port: Int
    let stats: Stats

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Runs the server for the duration of `body`, then stops it.
    static func with<T>(_ body: (TestServer) async throws -> T) async throws -> T {
        let stats = Stats()
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router(stats: stats),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                if let port = channel.localAddress?.port { portContinuation.yield(port) }
                portContinuation.finish()
            },
            logger: Logger(label: "test-server", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        // Stopped by a graceful shutdown, not by cancelling it (see LocalServer.stop).
        // Not awaited: a request a test left hanging must not hold the test up.
        let services = ServiceGroup(configuration: .init(services: [app], logger: app.logger))
        Task { try await services.run() }
        defer { Task { await services.triggerGracefulShutdown() } }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw ServerDidNotStart() }
        return try await body(TestServer(port: port, stats: stats))
    }

    struct ServerDidNotStart: Error {}
    struct BrokenOnPurpose: Error {}

    struct Context: RequestContext {
        var coreContext: CoreRequestContextStorage
        let remotePort: Int?

        init(source: ApplicationRequestContextSource) {
            self.coreContext = .init(source: source)
            self.remotePort = source.channel.remoteAddress?.port
        }
    }

    private static func router(stats: Stats) -> Router<Context> {
        let router = Router(context: Context.self)
        for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
            router.on("echo", method: method) { request, _ -> Response in
                let body = try await request.body.collect(upTo: 1 << 20)
                var headers = HTTPFields()
                headers[.init("X-Method")!] = request.method.rawValue
                headers[.init("X-Got-Test")!] = request.headers[.init("X-Test")!] ?? "absent"
                headers[.init("X-Got-Content-Length")!] = request.headers[.contentLength] ?? "absent"
                headers[.init("X-Got-Content-Type")!] = request.headers[.contentType] ?? "absent"
                headers[.init("X-Got-User-Agent")!] = request.headers[.userAgent] ?? "absent"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
            }
        }
        router.get("status/{code}") { request, context -> Response in
            let code = try context.parameters.require("code", as: Int.self)
            var headers = HTTPFields()
            if let retryAfter = request.uri.queryParameters["retryAfter"] { headers[.retryAfter] = String(retryAfter) }
            return Response(status: .init(code: code), headers: headers, body: .init(byteBuffer: ByteBuffer(string: "status \(code)")))
        }
        router.get("redirect") { _, _ -> Response in
            Response(status: .found, headers: [.location: "/echo"])
        }
        router.get("slow") { request, _ -> String in
            stats.slowStart()
            let milliseconds = request.uri.queryParameters.get("ms", as: Int.self) ?? 5000
            try await Task.sleep(for: .milliseconds(milliseconds))
            return "slow done"
        }
        router.on("bytes", method: .head) { request, _ -> Response in
            let count = request.uri.queryParameters.get("count", as: Int.self) ?? 0
            return Response(
                status: .ok, headers: [.contentLength: String(count)],
                body: ResponseBody(contentLength: count) { writer in
                    try await writer.finish(nil)
                })
        }
        router.get("bytes") { request, _ -> Response in
            let count = request.uri.queryParameters.get("count", as: Int.self) ?? 0
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(repeating: 0x61, count: count)))
        }
        router.get("stream") { request, _ -> Response in
            let chunks = request.uri.queryParameters.get("chunks", as: Int.self) ?? 1
            let size = request.uri.queryParameters.get("size", as: Int.self) ?? 1024
            let delay = request.uri.queryParameters.get("delayMs", as: Int.self) ?? 0
            return Response(
                status: .ok,
                body: ResponseBody { writer in
                    do {
                        for _ in 0..<chunks {
                            try await writer.write(ByteBuffer(repeating: 0x62, count: size))
                            if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
                        }
                    } catch {
                        stats.streamAborted()
                        throw error
                    }
                    try await writer.finish(nil)
                })
        }
        router.get("hold") { request, _ -> Response in
            let first = request.uri.queryParameters["first"].map(String.init) ?? ""
            return Response(
                status: .ok, headers: [.contentType: "text/plain"],
                body: ResponseBody { writer in
                    if !first.isEmpty { try await writer.write(ByteBuffer(string: first)) }
                    for _ in 0..<3000 where !stats.released { try await Task.sleep(for: .milliseconds(10)) }
                    try await writer.write(ByteBuffer(string: "rest"))
                    stats.holdFinish()
                    try await writer.finish(nil)
                })
        }
        router.get("broken") { request, _ -> Response in
            let chunks = request.uri.queryParameters.get("chunks", as: Int.self) ?? 1
            return Response(
                status: .ok,
                body: ResponseBody { writer in
                    for _ in 0..<chunks { try await writer.write(ByteBuffer(repeating: 0x64, count: 1024)) }
                    throw BrokenOnPurpose()
                })
        }
        router.get("announce") { request, _ -> Response in
            let length = request.uri.queryParameters.get("length", as: Int.self) ?? 0
            return Response(
                status: .ok,
                body: ResponseBody(contentLength: length) { writer in
                    try await writer.write(ByteBuffer(repeating: 0x63, count: 1024))
                    try await Task.sleep(for: .seconds(10))
                    try await writer.finish(nil)
                })
        }
        router.get("id/{n}") { _, context -> String in
            stats.enter()
            defer { stats.leave() }
            try await Task.sleep(for: .milliseconds(100))
            return try context.parameters.require("n")
        }
        router.get("client-port") { _, context -> String in
            context.remotePort.map(String.init) ?? "unknown"
        }
        return router
    }
}
