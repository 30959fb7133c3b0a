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
import Store

/// `carbscan serve`: the mobile API.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the mobile API (/api/mobile/v1) on Hummingbird.")

    @OptionGroup var global: GlobalOptions

    @Option(help: "Address to listen on (env CARBSCAN_HOST).")
    var host: String = ProcessInfo.processInfo.environment["CARBSCAN_HOST"] ?? "127.0.0.1"

    @Option(help: "Port to listen on (env CARBSCAN_PORT; default 8080).")
    var port: Int?

    @Flag(help: "Apply pending database migrations before serving.")
    var migrate = false

    @Option(help: "Postgres connections of this process.")
    var databasePool: Int = 8

    func run() async throws {
        LogSetup.bootstrap()
        try await reportingErrors {
            let logger = Logger(label: "carbscan.api")
            let environment = ProcessInfo.processInfo.environment
            let port = try port ?? SettingChecks.port(environment) ?? 8080
            let settings: ServeSettings
            do {
                settings = try ServeSettings.fromEnvironment(environment)
            } catch {
                throw CLIError("configuration: \(error)", exitCode: 78)
            }
            if settings.auth.usesEphemeralSecret {
                logger.warning("JWT_SECRET is not set: using a random secret, so tokens stop working when this process stops")
            }
            let database = try global.database(logger: logger, poolSize: databasePool)
            if migrate { try await Schema.migrate(database, logger: logger) }
            let queue = try global.jobQueue(logger: logger)
            let dependencies = await APIDependencies.live(database: database, queue: queue, settings: settings, logger: logger)
            try SettingChecks.scanResetZone(dependencies.scanResetTimeZone, catalog: queue.catalog)
            if let warning = try? await queue.evictionWarning() { logger.warning("\(warning)") }
            let app = try APIServer.application(dependencies, host: host, port: port) { port in
                logger.info("serving the mobile API", metadata: ["address": "\(host):\(port)"])
            }
            let group = ServiceGroup(
                configuration: .init(
                    // Shut down in reverse: the waiter first, so pending long-polls are answered with their job at once,
                    // then the server, which finishes the requests in flight (those answers among them).
                    services: [.init(service: app), .init(service: dependencies.waiter)], gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger))
            try await group.run()
            database.shutdown()
            queue.redis.close()
        }
    }
}
