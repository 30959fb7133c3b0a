import Crypto
import Foundation

/// One versioned schema change: a file `NNNN_name.sql` (`0003_devices.sql`), applied once, in version order.
///
/// Its SQL runs inside a transaction the migrator opens, so it must not contain `BEGIN`/`COMMIT` or statements
/// that cannot run in a transaction (`CREATE INDEX CONCURRENTLY`).
package struct Migration: Sendable, Equatable {
    package var version: Int
    package var name: String
    package var sql: String
    /// The file it was loaded from, for messages; nil when built in code.
    package var file: String?

    package init(version: Int, name: String, sql: String, file: String? = nil) {
        self.version = version
        self.name = name
        self.sql = sql
        self.file = file
    }

    /// SHA-256 of the SQL text (hex), recorded when applied: a file edited after that is refused.
    /// SHA-256 of the file's text, as 64 lowercase hex digits (swift-crypto; no home-made digest).
    package var checksum: String { SHA256.hash(data: Array(sql.utf8)).map { String(format: "%02x", $0) }.joined() }

    /// How messages name it: the file, or `version N (name)`.
    var label: String { file ?? "version \(version) (\(name))" }

    /// Loads every `NNNN_name.sql` in `directory`, sorted by version. Other files are ignored; a `.sql` file with
    /// a bad name, or two files with one version, is an error naming the file(s).
    package static func load(directory: URL) throws -> [Migration] {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        var byVersion: [Int: Migration] = [:]
        for url in files where url.pathExtension == "sql" {
            let file = url.lastPathComponent
            guard let match = file.wholeMatch(of: /([0-9]+)_([A-Za-z0-9_\-]+)\.sql/), let version = Int(match.output.1) else {
                throw MigrationError(
                    .invalidFile, "\(file): a migration file is named NNNN_name.sql (digits, '_', letters, digits, '_' or '-')")
            }
            if let other = byVersion[version] {
                throw MigrationError(.duplicateVersion, "\(file) and \(other.file ?? "?") both have version \(version)")
            }
            let sql: String
            do {
                sql = try String(contentsOf: url, encoding: .utf8)
            } catch {
                throw MigrationError(.invalidFile, "\(file): cannot read it as UTF-8 text (\(error))")
            }
            byVersion[version] = Migration(version: version, name: String(match.output.2), sql: sql, file: file)
        }
        return byVersion.values.sorted { $0.version < $1.version }
    }
}

/// Why loading or applying migrations failed.
package struct MigrationError: Error, CustomStringConvertible, Sendable {
    package enum Code: Sendable, Hashable {
        /// A `.sql` file with a bad name, or unreadable.
        case invalidFile
        /// Two files with one version.
        case duplicateVersion
        /// An applied migration's SQL changed since; nothing was applied.
        case checksumMismatch
        /// A migration failed and was rolled back; `underlying` has Postgres's error.
        case failed
    }

    package var code: Code
    package var message: String
    /// The Postgres error behind a `.failed` migration.
    package var underlying: PostgresError?

    package init(_ code: Code, _ message: String, underlying: PostgresError? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    package var description: String { "migration \(code): \(message)" }
}
