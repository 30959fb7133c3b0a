/// One pooled connection held by one caller across several statements (a transaction, the migrator's lock).
///
/// It remembers the connection's generation: once that connection broke, every later statement fails with
/// `.connection` instead of running on a fresh connection where the session's state (an open transaction, an
/// advisory lock) no longer exists.
struct PinnedConnection: Sendable {
    let thread: ConnectionThread
    let generation: Int

    /// Connects the thread's connection when needed and pins its generation.
    static func pin(_ thread: ConnectionThread) async throws(PostgresError) -> PinnedConnection {
        let generation = try await thread.run { connection throws(PostgresError) in try connection.ensureConnected() }
        return PinnedConnection(thread: thread, generation: generation)
    }

    func query(_ sql: String, _ parameters: [EncodedParameter]) async throws(PostgresError) -> PostgresRows {
        try await thread.run { [generation] connection throws(PostgresError) in
            try connection.require(generation: generation)
            return try connection.query(sql, parameters)
        }
    }

    func script(_ sql: String) async throws(PostgresError) {
        try await thread.run { [generation] connection throws(PostgresError) in
            try connection.require(generation: generation)
            try connection.script(sql)
        }
    }

    /// `BEGIN`; through a transaction pooler, where the startup packet carries no `statement_timeout`, with the
    /// timeout for this transaction in the same message (no extra round trip).
    private var begin: String {
        let configuration = thread.configuration
        guard configuration.pooler != nil, let timeout = configuration.statementTimeout else { return "BEGIN" }
        return "BEGIN; SET LOCAL statement_timeout = \(max(timeout.millisecondsRoundedUp, 0))"
    }

    /// Runs `body` between `BEGIN` and `COMMIT`; on a throw, sends `ROLLBACK` (dropping the connection if even that
    /// fails) and rethrows.
    func transaction<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresTransaction) async throws -> T
    ) async throws -> T {
        try await script(begin)
        let transaction = PostgresTransaction(connection: self)
        let value: T
        do {
            value = try await body(transaction)
        } catch {
            transaction.end()
            // After shutdown the thread is gone, and closing its connection rolls the transaction back anyway.
            try? await thread.run { [generation] connection in
                guard (try? connection.require(generation: generation)) != nil else { return }
                if (try? connection.script("ROLLBACK")) == nil { connection.close() }
            }
            throw error
        }
        transaction.end()
        try await thread.run { [generation] connection throws(PostgresError) in
            try connection.require(generation: generation)
            try connection.commit()
        }
        return value
    }
}
