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

/// `carbscan migrate`: applies pending migrations (safe to run from several machines at once).
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply pending database migrations, or show them with --status.")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "List the migrations and when each was applied; apply nothing.")
    var status = false

    func run() async throws {
        LogSetup.bootstrap()
        try await reportingErrors {
            let logger = Logger(label: "carbscan.migrate")
            let database = try global.migrationDatabase(logger: logger)
            defer { database.shutdown() }
            let migrator = Migrator(client: database, migrations: try Schema.migrations(), logger: logger)
            if status {
                for (migration, appliedAt) in try await migrator.status() {
                    let when = appliedAt.map { $0.formatted(.iso8601) } ?? "pending"
                    print(String(format: "%04d", migration.version), migration.name, when)
                }
            } else {
                let applied = try await migrator.migrate()
                print(
                    applied.isEmpty
                        ? "migrate: nothing to apply"
                        : "migrate: applied " + applied.map { "\($0.version)_\($0.name)" }.joined(separator: ", "))
            }
        }
    }
}
