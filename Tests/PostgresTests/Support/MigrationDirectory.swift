import Foundation

/// A temporary folder of migration files, removed on deinit.
final class MigrationDirectory {
    let url: URL

    init(_ files: [String: String]) throws {
        url = FileManager.default.temporaryDirectory.appending(path: "pgtest-migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for (name, sql) in files { try write(name, sql) }
    }

    func write(_ name: String, _ sql: String) throws {
        try sql.write(to: url.appending(path: name), atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
