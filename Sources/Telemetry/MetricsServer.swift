import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle

/// The tiny HTTP listener of `carbscan work` and `carbscan schedule` (`--metrics-port`): `GET /metrics` and nothing
/// else, on Hummingbird's event loops, never on a job's path. Run it as a service next to the worker.
public enum MetricsServer {
    /// The route that answers a scrape, for any router (`carbscan serve` adds it to its own).
    public static func addRoute<Context: RequestContext>(to router: Router<Context>, telemetry: Telemetry) {
        router.get("/metrics") { _, _ in try await MetricsServer.response(telemetry) }
    }

    /// The exposition, or 503 with the reason when a reading failed (Redis down): no stale queue figures.
    static func response(_ telemetry: Telemetry) async throws -> Response {
        do {
            let text = try await telemetry.scrape()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        } catch {
            return Response(
                status: .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "metrics unavailable: \(error)\n")))
        }
    }

    /// A service that serves `/metrics` on `host:port` (0: a free port, reported to `onRunning`).
    public static func application(
        _ telemetry: Telemetry, host: String, port: Int, logger: Logger, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some Service {
        let router = Router()
        addRoute(to: router, telemetry: telemetry)
        return Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "carbscan-metrics"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) }, logger: logger)
    }
}
