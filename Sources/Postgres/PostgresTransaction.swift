import Synchronization
import Traces

/// Statements inside `PostgresClient.transaction`, all on the transaction's connection. Valid only inside the
/// closure: afterwards every call throws `.closed`.
package struct PostgresTransaction: PostgresQueryable {
    private final class State: Sendable {
        let ended = Atomic<Bool>(false)
    }

    private let connection: PinnedConnection
    private let state = State()

    init(connection: PinnedConnection) {
        self.connection = connection
    }

    func end() { state.ended.store(true, ordering: .releasing) }

    private func checkOpen() throws(PostgresError) {
        if state.ended.load(ordering: .acquiring) {
            throw PostgresError(.closed, "the transaction has ended; use it only inside its closure")
        }
    }

    package func query(_ sql: String, _ parameters: [(any PostgresEncodable)?]) async throws -> PostgresRows {
        try checkOpen()
        let parameters = parameters.map(EncodedParameter.init)
        if TraceSwitch.inSampledStatementTrace {
            return try await StatementSpan.traced(sql, connection.thread.configuration) { try await connection.query(sql, parameters) }
        }
        return try await connection.query(sql, parameters)
    }

    @discardableResult
    package func execute(_ sql: String, _ parameters: [(any PostgresEncodable)?]) async throws -> Int {
        try await query(sql, parameters).affectedRows
    }

    /// Runs several statements (simple-query protocol, no parameters) inside the transaction.
    package func executeScript(_ sql: String) async throws {
        try checkOpen()
        try await connection.script(sql)
    }
}
