import Hummingbird
import Logging
import ServiceLifecycle

/// A Hummingbird server on a free loopback port, running in this process until `stop()`: how tests stand in for
/// the HTTP peers outside the project (identity providers, the AI model, the login endpoint, the billing API).
public struct LocalServer: Sendable {
    public let port: Int
    private let group: ServiceGroup

    public var url: String { "http://127.0.0.1:\(port)" }

    /// Starts serving `router` and returns once the port is bound.
    public static func start(_ router: Router<BasicRequestContext>, name: String) async throws -> LocalServer {
        var logger = Logger(label: name)
        logger.logLevel = .critical
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        Task { try await group.run() }
        var iterator = stream.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            await group.triggerGracefulShutdown()
            throw ServerError("the \(name) server did not start")
        }
        return LocalServer(port: port, group: group)
    }

    /// Stops accepting at once and ends open connections when their requests finish. A graceful shutdown, never a
    /// cancelled task: cancelling the server while a connection is being accepted leaves that connection's channel
    /// unserved, and NIO traps on it ("Deinited NIOAsyncWriter without calling finish()", swift-nio#3481), which
    /// crashed the whole test run.
    public func stop() { Task { [group] in await group.triggerGracefulShutdown() } }
}
