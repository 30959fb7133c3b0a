import AppStore
import ArgumentParser
import Foundation
import Logging
import Mail
import OutboundHTTP
import Queue
import ServiceLifecycle
import Store
import Workers

struct ScheduleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule", abstract: "Fire the cron schedules of jobs/*.yml (safe to run several).")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        LogSetup.bootstrap()
        try await reportingErrors {
            let logger = Logger(label: "carbscan.scheduler")
            let queue = try global.jobQueue(logger: logger)
            let zone = try EnvironmentSettings(ProcessInfo.processInfo.environment).timeZone("SCAN_RESET_TIMEZONE", default: .gmt)
            try SettingChecks.scanResetZone(zone, catalog: queue.catalog)
            let scheduler = CronScheduler(queue: queue, logger: logger)
            let group = ServiceGroup(
                configuration: .init(services: [.init(service: scheduler)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
            queue.redis.close()
        }
    }
}
