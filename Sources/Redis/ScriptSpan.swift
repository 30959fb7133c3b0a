import Traces

/// A Lua script's call as an OpenTelemetry client span (database semantic conventions; the script's name, never its
/// keys or arguments). Only inside a sampled trace of a process that asked for them (`TraceSwitch.inSampledStatementTrace`): scripts are the queue's and the API's calls that
/// do the work of a request; single commands are not traced.
enum ScriptSpan {
    static func traced<T>(
        _ script: RedisScript, _ configuration: RedisConfiguration, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async throws -> T {
        try await TraceSwitch.withSpan("EVALSHA \(script.name)", ofKind: .client) { span in
            var fields = SpanFields(capacity: 5)
            fields.append("db.system.name", "redis")
            fields.append("db.operation.name", "EVALSHA")
            fields.append("db.stored_procedure.name", .string(script.name))
            fields.append("server.address", .string(configuration.host))
            fields.append("server.port", .int(Int64(configuration.port)))
            span.set(fields)
            do {
                return try await body()
            } catch {
                span.set("error.type", .string((error as? RedisError).map { "\($0.code)" } ?? "\(type(of: error))"))
                span.setStatus(SpanStatus(code: .error, message: String(describing: error)))
                throw error
            }
        }
    }
}
