import Hummingbird
import Logging

/// A Hummingbird server on a free loopback port, running in this process until `stop()`: how tests stand in for
/// the HTTP peers outside the project (identity providers, the AI model, the login endpoint, the billing API).
public struct LocalServer: Sendable {
    public let port: Int
    private let task: Task<Void, any Error>

    public var url: String { "http://127.0.0.1:\(port)" }

    /// Starts serving `router` and returns once the port is bound.
    public static func start(_ router: Router<BasicRequestContext>, name: String) async throws -> LocalServer {
        var logger = Logger(label: name)
        logger.logLevel = .critical
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await app.runService() }
        var iterator = stream.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            task.cancel()
            throw ServerError("the \(name) server did not start")
        }
        return LocalServer(port: port, task: task)
    }

    public func stop() { task.cancel() }
}
