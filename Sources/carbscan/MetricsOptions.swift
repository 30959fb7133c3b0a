import ArgumentParser
import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import Telemetry

/// `--metrics-port` and `--metrics-host`: where a process answers `GET /metrics` (Prometheus text format). Off unless
/// a port is given; loopback unless a host is given, as the figures are for the operator's scraper, not the public.
struct MetricsOptions: ParsableArguments {
    @Option(help: "Serve Prometheus metrics at GET /metrics on this port (0: a free one, logged). Default: no metrics.")
    var metricsPort: Int?

    @Option(help: "Address the metrics listener binds (with --metrics-port; keep it private).")
    var metricsHost: String = "127.0.0.1"

    func validate() throws {
        if let metricsPort, !(0...65535).contains(metricsPort) { throw ValidationError("--metrics-port must be 0…65535") }
        if metricsHost.isEmpty { throw ValidationError("--metrics-host must not be empty") }
    }

    /// `services`, and the listener of `telemetry` after them (it logs the address it bound) with `--metrics-port`.
    func services(
        _ services: [ServiceGroupConfiguration.ServiceConfiguration], telemetry: Telemetry?, logger: Logger
    ) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        guard let telemetry, let metricsPort else { return services }
        let host = metricsHost
        let service = MetricsServer.application(telemetry, host: host, port: metricsPort, logger: logger) { port in
            logger.info("serving metrics", metadata: ["address": "\(host):\(port)", "path": "/metrics"])
        }
        return services + [.init(service: service)]
    }
}

extension Telemetry {
    private static let bootstrapped = Mutex(false)

    /// The process's telemetry: also the factory of `MetricsSystem`, so libraries' metrics land in the same registry.
    static func forProcess() -> Telemetry {
        let telemetry = Telemetry(version: BuildVersion.current)
        let first = bootstrapped.withLock { done in
            defer { done = true }
            return !done
        }
        if first { MetricsSystem.bootstrap(telemetry.factory) }
        return telemetry
    }
}
