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
            span.updateAttributes { attributes in
                attributes["db.system.name"] = "redis"
                attributes["db.operation.name"] = "EVALSHA"
                attributes["db.stored_procedure.name"] = script.name
                attributes["server.address"] = configuration.host
                attributes["server.port"] = configuration.port
            }
            do {
                return try await body()
            } catch {
                span.attributes["error.type"] = (error as? RedisError).map { "\($0.code)" } ?? "\(type(of: error))"
                span.setStatus(SpanStatus(code: .error, message: String(describing: error)))
                throw error
            }
        }
    }
}
