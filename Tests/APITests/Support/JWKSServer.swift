import Foundation
import Hummingbird
import Logging
import Synchronization

/// A local HTTP server publishing the fake providers' JWKS the way Apple (`/auth/keys`) and Clerk
/// (`/.well-known/jwks.json`) do, counting fetches.
final class JWKSServer: Sendable {
    let port: Int
    private let task: Task<Void, any Error>
    private let counts: Counts

    private init(port: Int, task: Task<Void, any Error>, counts: Counts) {
        self.port = port
        self.task = task
        self.counts = counts
    }

    /// How many times the provider's JWKS was fetched.
    func fetchCount(_ provider: String) -> Int { counts.storage.withLock { $0[provider] ?? 0 } }

    static func start(apple: IdentityKeys, clerk: IdentityKeys) async throws -> JWKSServer {
        let counts = Counts()
        let router = Router()
        router.get("apple/auth/keys") { _, _ in
            counts.increment("apple")
            return try Self.json(apple.jwksJSON())
        }
        router.get("clerk/.well-known/jwks.json") { _, _ in
            counts.increment("clerk")
            return try Self.json(clerk.jwksJSON())
        }
        var logger = Logger(label: "jwks")
        logger.logLevel = .critical
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await app.runService() }
        var iterator = stream.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else { throw TestFailure("JWKS server did not start") }
        return JWKSServer(port: port, task: task, counts: counts)
    }

    func stop() { task.cancel() }

    private static func json(_ data: Data) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

private final class Counts: Sendable {
    let storage = Mutex<[String: Int]>([:])
    func increment(_ key: String) { storage.withLock { $0[key, default: 0] += 1 } }
}
