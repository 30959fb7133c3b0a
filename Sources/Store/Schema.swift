import Foundation
import Logging
import Postgres

/// CarbScan's schema: the versioned SQL files in `Migrations/`, shipped with the binary as resources.
package enum Schema {
    package static func migrations() throws -> [Migration] {
        guard let directory = Bundle.module.url(forResource: "Migrations", withExtension: nil) else {
            throw StoreError("the Migrations folder is missing from the Store bundle")
        }
        return try Migration.load(directory: directory)
    }

    /// Applies pending migrations (safe with concurrent starters: the migrator holds an advisory lock).
    @discardableResult
    package static func migrate(_ client: PostgresClient, logger: Logger) async throws -> [Migration] {
        try await Migrator(client: client, migrations: migrations(), logger: logger).migrate()
    }
}
