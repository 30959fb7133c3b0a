import Foundation
import Hummingbird
import Synchronization
import TestSupport

/// A local HTTP server publishing the fake providers' JWKS the way Apple (`/auth/keys`) and Clerk
/// (`/.well-known/jwks.json`) do, counting fetches.
final class JWKSServer: Sendable {
    let port: Int
    private let server: LocalServer
    private let counts: Counts

    private init(port: Int, server: LocalServer, counts: Counts) {
        self.port = port
        self.server = server
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
        let server = try await LocalServer.start(router, name: "jwks")
        return JWKSServer(port: server.port, server: server, counts: counts)
    }

    func stop() { server.stop() }

    private static func json(_ data: Data) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

private final class Counts: Sendable {
    let storage = Mutex<[String: Int]>([:])
    func increment(_ key: String) { storage.withLock { $0[key, default: 0] += 1 } }
}
