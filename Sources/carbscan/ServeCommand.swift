import API
import Accounts
import AppStore
import ArgumentParser
import Foundation
import Hummingbird
import Logging
import OutboundHTTP
import Postgres
import ServiceLifecycle
import Settings
import Store
import Telemetry

/// `carbscan serve`: the mobile API.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the mobile API (/api/mobile/v1) on Hummingbird.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var metrics: MetricsOptions

    /// The API's own port answers GET /metrics (no auth: keep that path off the public internet, see
    /// docs/operating-ops-metrics.md); this turns it and the API's instrumentation off.
    @Flag(help: "Answer no /metrics and count nothing (default: /metrics on the API's port, and on --metrics-port).")
    var noMetrics = false

    @Option(help: "Address to listen on (env CARBSCAN_HOST).")
    var host: String = EnvironmentReader.process.text("CARBSCAN_HOST") ?? "127.0.0.1"

    @Option(help: "Port to listen on (env CARBSCAN_PORT; default 8080).")
    var port: Int?

    @Flag(help: "Apply pending database migrations before serving.")
    var migrate = false

    @Option(help: "Postgres connections of this process.")
    var databasePool: Int = 8

    func validate() throws {
        if noMetrics && metrics.metricsPort != nil { throw ValidationError("--no-metrics and --metrics-port exclude each other") }
    }

    func run() async throws {
        LogSetup.bootstrap()
        try await reportingErrors {
            let logger = Logger(label: "carbscan.api")
            let tracing = try TracingSetup.bootstrap(serviceName: "carbscan-api")
            let environment = EnvironmentReader.process
            let port = try port ?? SettingChecks.port(environment) ?? 8080
            let settings = try ServeSettings(environment: environment)
            if settings.auth.usesEphemeralSecret {
                logger.warning("JWT_SECRET is not set: using a random secret, so tokens stop working when this process stops")
            }
            // The API's statements are all keyed by a user or an id: planned once (`PostgresConfiguration.genericPlans`).
            let database = try global.database(logger: logger, poolSize: databasePool, genericPlans: true)
            if migrate { try await global.migrate(logger: logger) }
            let queue = try global.jobQueue(logger: logger)
            let telemetry = noMetrics ? nil : Telemetry.forProcess()
            let http = HTTPClient(observer: telemetry.map { HTTPClientMetrics(telemetry: $0) })
            let dependencies = await APIDependencies.live(
                database: database, queue: queue, settings: settings, logger: logger, http: http)
            if let telemetry { QueueMetrics.register(queue, on: telemetry) }
            let replicas = dependencies.reads.replicas
            if let telemetry, let replicas { ReadReplicaMetrics.register(replicas, on: telemetry) }
            try SettingChecks.scanResetZone(dependencies.scanResetTimeZone, catalog: queue.catalog)
            if let warning = try? await queue.evictionWarning() { logger.warning("\(warning)") }
            let app = try APIServer.application(dependencies, host: host, port: port, telemetry: telemetry) { port in
                logger.info("serving the mobile API", metadata: ["address": "\(host):\(port)"])
            }
            // Shut down in reverse: the waiter first, so pending long-polls are answered with their job at once, then the
            // server, which finishes the requests in flight (those answers among them), then the replicas' health checks,
            // and last the span exporter, which sends the spans of those requests.
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: app), .init(service: dependencies.waiter)]
            if let replicas {
                services.insert(.init(service: ReadReplicaHealthService(replicas)), at: 0)
                logger.info("reading from replicas", metadata: ["replicas": "\(replicas.replicas.map(\.name))"])
            }
            let group = ServiceGroup(
                configuration: .init(
                    services: TracingSetup.first(tracing, metrics.services(services, telemetry: telemetry, logger: logger)),
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger))
            try await group.run()
            replicas?.shutdown()
            database.shutdown()
            queue.redis.close()
        }
    }
}
