/// Something statements can run on: the pooled `PostgresClient`, or a `PostgresTransaction`.
///
/// Parameters are bound as `$1`, `$2`, … and never spliced into the SQL; `nil` binds NULL.
package protocol PostgresQueryable: Sendable {
    /// Runs one statement and returns its rows.
    func query(_ sql: String, _ parameters: [(any PostgresEncodable)?]) async throws -> PostgresRows
    /// Runs one statement and returns how many rows it inserted, updated or deleted.
    @discardableResult
    func execute(_ sql: String, _ parameters: [(any PostgresEncodable)?]) async throws -> Int
}

extension PostgresQueryable {
    package func query(_ sql: String) async throws -> PostgresRows {
        try await query(sql, [])
    }

    @discardableResult
    package func execute(_ sql: String) async throws -> Int {
        try await execute(sql, [])
    }
}
