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
        let diagnostics = Logger(label: "carbscan.otel")
        configuration.diagnosticLogger = .custom(diagnostics)
        configuration.diagnosticLogLevel = .warning
        let (sampling, values) = try sampling(environment) { diagnostics.warning("\($0)") }
        let service = try OTel.bootstrap(configuration: configuration, environment: values)
        TraceSwitch.turnOn(statements: statements, sampling: sampling) { $0.otelIsSampled }
        return service
    }

    /// The sampling decided before any span (`TraceSampling`), from `OTEL_TRACES_SAMPLER` and `_ARG`, and the variables
    /// swift-otel is then bootstrapped with: its sampler `always_on`, as it is asked only for sampled spans. With
    /// propagators other than W3C's `tracecontext` (`OTEL_PROPAGATORS`: b3, jaeger, baggage…) the decision stays
    /// swift-otel's (nil), as their contexts are only its to read. A value that cannot be read is warned of and the
    /// default kept (`parentbased_always_on`, a ratio of 1), as the specification asks; the samplers that need a
    /// remote (Jaeger's, X-Ray's) are refused, where swift-otel would stop the process.
    static func sampling(
        _ environment: EnvironmentReader, warn: (String) -> Void
    ) throws -> (TraceSampling?, [String: String]) {
        let name = environment.text("OTEL_TRACES_SAMPLER")?.lowercased() ?? "parentbased_always_on"
        if ["jaeger_remote", "parentbased_jaeger_remote", "xray"].contains(name) {
            throw SettingError("OTEL_TRACES_SAMPLER", "'\(name)' is not supported: always_on, always_off, traceidratio or parentbased_*")
        }
        if let propagators = environment.text("OTEL_PROPAGATORS"),
            Set(propagators.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }) != ["tracecontext"]
        {
            return (nil, environment.values)
        }
        func ratio() -> Double {
            guard let text = environment.text("OTEL_TRACES_SAMPLER_ARG") else { return 1 }
            guard let ratio = Double(text), (0...1).contains(ratio) else {
                warn("OTEL_TRACES_SAMPLER_ARG: '\(text)' is not a ratio from 0 to 1; 1 is used")
                return 1
            }
            return ratio
        }
        let sampling: TraceSampling
        switch name {
        case "always_on": sampling = TraceSampling(followsParent: false, ratio: 1)
        case "always_off": sampling = TraceSampling(followsParent: false, ratio: 0)
        case "traceidratio": sampling = TraceSampling(followsParent: false, ratio: ratio())
        case "parentbased_always_on": sampling = TraceSampling(followsParent: true, ratio: 1)
        case "parentbased_always_off": sampling = TraceSampling(followsParent: true, ratio: 0)
        case "parentbased_traceidratio": sampling = TraceSampling(followsParent: true, ratio: ratio())
        default:
            warn("OTEL_TRACES_SAMPLER: '\(name)' is not a known sampler; parentbased_always_on is used")
            sampling = TraceSampling(followsParent: true, ratio: 1)
        }
        var values = environment.values
        values["OTEL_TRACES_SAMPLER"] = "always_on"
        values["OTEL_TRACES_SAMPLER_ARG"] = nil
        return (sampling, values)
    }

    /// `services` behind the exporter's service, when tracing is on: a service group stops its services in reverse.
    static func first(
        _ tracing: (any Service)?, _ services: [ServiceGroupConfiguration.ServiceConfiguration]
    ) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        guard let tracing else { return services }
        return [.init(service: tracing)] + services
    }

    /// Log lines written inside a span carry its `trace_id` and `span_id`; inside a trace the sampler dropped, which
    /// has no span here, its `trace_id` and `trace_flags` 0.
    static var logMetadata: Logger.MetadataProvider {
        let spans = OTel.makeLoggingMetadataProvider()
        return Logger.MetadataProvider {
            guard let dropped = InstrumentationContext.current?.droppedTrace else { return spans.get() }
            return ["trace_id": "\(dropped.traceparent.traceID)", "trace_flags": "0"]
        }
    }
}
