import Logging
import OTel
import ServiceLifecycle
import Settings
import Traces

/// OpenTelemetry tracing from the standard variables, through swift-otel's OTLP/HTTP exporter. Off unless an OTLP
/// endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); `OTEL_TRACES_EXPORTER=none`
/// or `OTEL_SDK_DISABLED=true` turn it off all the same. swift-otel reads the rest: `OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`/`_ARG`, `OTEL_PROPAGATORS`, `OTEL_EXPORTER_OTLP_HEADERS`, the
/// batch processor's `OTEL_BSP_*`; a value it cannot read is logged as a warning and its default kept, as the
/// specification asks.
enum TracingSetup {
    /// Whether the variables ask for traces. Throws for what this build cannot do, rather than dying inside the
    /// exporter or sending what a collector refuses: gRPC (only OTLP/HTTP is built in), OTLP/JSON (swift-otel's ids
    /// are base64 there) and exporters other than `otlp` and `none`.
    static func isWanted(_ environment: EnvironmentReader) throws -> Bool {
        if environment.text("OTEL_SDK_DISABLED")?.lowercased() == "true" { return false }
        switch environment.text("OTEL_TRACES_EXPORTER")?.lowercased() {
        case nil, "otlp": break
        case "none": return false
        case let other?:
            throw SettingError("OTEL_TRACES_EXPORTER", "'\(other)' is not supported: otlp (the default) or none")
        }
        guard environment.text("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") ?? environment.text("OTEL_EXPORTER_OTLP_ENDPOINT") != nil else {
            return false
        }
        // http/json too: swift-otel 1.6.0 writes its ids in base64 where OTLP/JSON says hex, and a collector refuses them.
        for variable in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let value = environment.text(variable), value != "http/protobuf" {
                throw SettingError(variable, "'\(value)' is not supported: http/protobuf, to the collector's port 4318")
            }
        }
        return true
    }

    /// Bootstraps tracing when the variables ask for it and returns the exporter's service, to run first in the
    /// process's service group: stopped last, it sends the spans of the requests and jobs that ended in the shutdown.
    static func bootstrap(serviceName: String, environment: EnvironmentReader = .process) throws -> (any Service)? {
        guard try isWanted(environment) else { return nil }
        let statements = try environment.bool("TRACE_STATEMENTS", default: false)
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.resourceAttributes["service.version"] = BuildVersion.current
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.diagnosticLogger = .custom(Logger(label: "carbscan.otel"))
        configuration.diagnosticLogLevel = .warning
        let service = try OTel.bootstrap(configuration: configuration, environment: environment.values)
        TraceSwitch.turnOn(statements: statements) { $0.otelIsSampled }
        return service
    }

    /// `services` behind the exporter's service, when tracing is on: a service group stops its services in reverse.
    static func first(
        _ tracing: (any Service)?, _ services: [ServiceGroupConfiguration.ServiceConfiguration]
    ) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        guard let tracing else { return services }
        return [.init(service: tracing)] + services
    }

    /// Log lines written inside a span carry its `trace_id` and `span_id`.
    static var logMetadata: Logger.MetadataProvider { OTel.makeLoggingMetadataProvider() }
}
