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
            var fields = SpanFields(capacity: 6)
            fields.append("db.system.name", "postgresql")
            fields.append("db.operation.name", .string(operation))
            fields.append("db.query.text", .string(sql))
            if let database = configuration.database { fields.append("db.namespace", .string(database)) }
            fields.append("server.address", .string(configuration.host))
            fields.append("server.port", .int(Int64(configuration.port)))
            span.set(fields)
            do {
                return try await body()
            } catch let error as PostgresError {
                if let state = error.sqlState { span.set("db.response.status_code", .string(state)) }
                span.set("error.type", .string(error.sqlState ?? "\(error.code)"))
                span.setStatus(SpanStatus(code: .error, message: error.message))
                throw error
            }
        }
    }
}
