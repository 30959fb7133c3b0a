import Foundation
import Logging

/// Applies pending `Migration`s, recording each in `schema_migrations` (in the first schema of the configured
/// `searchPath`).
///
/// Concurrent starters are safe: the migrator holds a session advisory lock (per schema) on one connection while it
/// reads what ran and applies the rest, so a second starter waits, then finds nothing to do. Each migration runs in
/// its own transaction together with its record, so a failing one leaves no trace.
package struct Migrator: Sendable {
    private let client: PostgresClient
    private let migrations: [Migration]
    private let logger: Logger

    /// Any constant serves; it keeps the migration lock apart from other advisory locks of the application.
    private static let lockNamespace = 0x6d69_6772  // "migr"

    package init(client: PostgresClient, migrations: [Migration], logger: Logger) {
        self.client = client
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.logger = logger
    }

    /// Applies the pending migrations in version order and returns them. Refuses to apply anything when an applied
    /// migration's SQL has changed since.
    @discardableResult
    package func migrate() async throws -> [Migration] {
        guard client.configuration.pooler == nil else {
            throw PostgresError(
                .invalidURL,
                "migrations hold a session advisory lock, which a transaction pooler does not keep: "
                    + "give them a direct connection to PostgreSQL (DATABASE_MIGRATION_URL)")
        }
        return try await client.withPinnedConnection { connection in
            do {
                // Migrations may run long (index builds), and the lock may wait for another starter: no statement timeout.
                try await connection.script(
                    "SET statement_timeout = 0; SELECT pg_advisory_lock(\(Self.lockNamespace), hashtext(coalesce(current_schema(), '')))")
                let applied = try await applyPending(on: connection)
                try await unlock(connection)
                return applied
            } catch {
                // Also restores the statement timeout before the connection goes back to the pool.
                try? await unlock(connection)
                throw error
            }
        }
    }

    /// Every known migration with when it was applied (nil: pending).
    package func status() async throws -> [(migration: Migration, appliedAt: Date?)] {
        let present: Bool = try await client.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")[0].decode("present")
        var appliedAt: [Int: Date] = [:]
        if present {
            for row in try await client.query("SELECT version, applied_at FROM schema_migrations") {
                appliedAt[try row.decode("version")] = try row.decode("applied_at", as: Date.self)
            }
        }
        return migrations.map { ($0, appliedAt[$0.version]) }
    }

    private func unlock(_ connection: PinnedConnection) async throws {
        try await connection.script(
            "SELECT pg_advisory_unlock(\(Self.lockNamespace), hashtext(coalesce(current_schema(), ''))); RESET statement_timeout")
    }

    private func applyPending(on connection: PinnedConnection) async throws -> [Migration] {
        try await connection.script(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer     PRIMARY KEY,
                name       text        NOT NULL,
                checksum   text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        var appliedChecksums: [Int: String] = [:]
        for row in try await connection.query("SELECT version, checksum FROM schema_migrations", []) {
            appliedChecksums[try row.decode("version")] = try row.decode("checksum", as: String.self)
        }
        let changed = migrations.filter { migration in
            appliedChecksums[migration.version].map { $0 != migration.checksum } ?? false
        }
        if !changed.isEmpty {
            throw MigrationError(
                .checksumMismatch,
                "already applied, but changed since: \(changed.map(\.label).joined(separator: ", ")); "
                    + "add a new migration instead of editing an applied one (nothing was applied)")
        }
        let known = Set(migrations.map(\.version))
        let unknown = appliedChecksums.keys.filter { !known.contains($0) }.sorted()
        if !unknown.isEmpty {
            logger.warning("the database has migrations this build does not know", metadata: ["versions": "\(unknown)"])
        }
        var applied: [Migration] = []
        for migration in migrations where appliedChecksums[migration.version] == nil {
            let start = ContinuousClock.now
            do {
                try await connection.transaction { transaction in
                    try await transaction.executeScript(migration.sql)
                    try await transaction.execute(
                        "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, now())",
                        [migration.version, migration.name, migration.checksum])
                }
            } catch let error as PostgresError {
                throw MigrationError(.failed, "\(migration.label) failed and was rolled back: \(error)", underlying: error)
            }
            logger.info(
                "applied migration",
                metadata: ["version": "\(migration.version)", "name": "\(migration.name)", "duration": "\(ContinuousClock.now - start)"])
            applied.append(migration)
        }
        return applied
    }
}
