import AppStore
import ArgumentParser
import Foundation
import Logging
import Mail
import OutboundHTTP
import Queue
import ServiceLifecycle
import Settings
import Store
import Telemetry
import Workers

struct ScheduleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule", abstract: "Fire the cron schedules of jobs/*.yml (safe to run several).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var metrics: MetricsOptions

    @Option(help: "Seconds between the process's beats in the registry (carbscan processes); it drops out after two missed.")
    var heartbeat: Double = 5

    func validate() throws {
        guard heartbeat >= 0.1 && heartbeat <= 60 else { throw ValidationError("--heartbeat must be 0.1…60 seconds") }
    }

    func run() async throws {
        LogSetup.bootstrap()
        try await reportingErrors {
            let logger = Logger(label: "carbscan.scheduler")
            let tracing = try TracingSetup.bootstrap(serviceName: "carbscan-scheduler")
            let queue = try global.jobQueue(logger: logger)
            let zone = try EnvironmentReader.process.timeZone("SCAN_RESET_TIMEZONE", default: .gmt)
            try SettingChecks.scanResetZone(zone, catalog: queue.catalog)
            let scheduler = CronScheduler(queue: queue, logger: logger)
            let telemetry = metrics.metricsPort == nil ? nil : Telemetry.forProcess()
            if let telemetry { QueueMetrics.register(queue, on: telemetry) }
            let beacon = ProcessBeacon(
                queue: queue, schedulerInterval: .milliseconds(Int64(heartbeat * 1000)), version: BuildVersion.current, logger: logger)
            // The beacon returns on `carbscan processes stop`, which ends the group as a SIGTERM would.
            let group = ServiceGroup(
                configuration: .init(
                    services: TracingSetup.first(
                        tracing,
                        metrics.services(
                            [.init(service: scheduler), .init(service: beacon, successTerminationBehavior: .gracefullyShutdownGroup)],
                            telemetry: telemetry, logger: logger)),
                    gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
            queue.redis.close()
        }
    }
}
