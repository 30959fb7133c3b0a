import Traces

/// A statement as an OpenTelemetry client span (database semantic conventions): its SQL text with `$n` placeholders,
/// never its parameters' values. Only inside a sampled trace of a process that asked for them (`TraceSwitch.inSampledStatementTrace`).
enum StatementSpan {
    static func traced<T>(
        _ sql: String, _ configuration: PostgresConfiguration, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async throws -> T {
        let operation = String(sql.drop { $0.isWhitespace }.prefix { !$0.isWhitespace }).uppercased()
        return try await TraceSwitch.withSpan(operation.isEmpty ? "postgresql" : operation, ofKind: .client) { span in
            span.updateAttributes { attributes in
                attributes["db.system.name"] = "postgresql"
                attributes["db.operation.name"] = operation
                attributes["db.query.text"] = sql
                attributes["db.namespace"] = configuration.database
                attributes["server.address"] = configuration.host
                attributes["server.port"] = configuration.port
            }
            do {
                return try await body()
            } catch let error as PostgresError {
                if let state = error.sqlState { span.attributes["db.response.status_code"] = state }
                span.attributes["error.type"] = error.sqlState ?? "\(error.code)"
                span.setStatus(SpanStatus(code: .error, message: error.message))
                throw error
            }
        }
    }
}
