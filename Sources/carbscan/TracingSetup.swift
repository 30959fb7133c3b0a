import Foundation
import Logging
import ServiceLifecycle
import Settings
import TraceExport
import Traces

/// OpenTelemetry tracing from the standard variables: spans recorded by `SpanRecorder` and sent by `OTLPExporter`
/// (OTLP/HTTP, binary protobuf). Off unless an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT` or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true` turn it off all the
/// same. Read too: `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`/`_ARG`, `OTEL_PROPAGATORS`,
/// `OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`, `_CERTIFICATE` (each also as `OTEL_EXPORTER_OTLP_TRACES_*`), and the
/// batch processor's `OTEL_BSP_*`; a value that cannot be read is logged as a warning and its default kept, as the
/// specification asks.
enum TracingSetup {
    /// Whether the variables ask for traces. Throws for what this build cannot do, rather than sending what a
    /// collector cannot read: gRPC and OTLP/JSON (only binary protobuf over HTTP is written), gzip, and exporters
    /// other than `otlp` and `none`.
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
        for variable in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let value = environment.text(variable), value != "http/protobuf" {
                throw SettingError(variable, "'\(value)' is not supported: http/protobuf, to the collector's port 4318")
            }
        }
        for variable in ["OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"] {
            if let value = environment.text(variable), value.lowercased() != "none" {
                throw SettingError(variable, "'\(value)' is not supported: none (spans are sent uncompressed)")
            }
        }
        _ = try propagates(environment)
        return true
    }

    /// Bootstraps tracing when the variables ask for it and returns the exporter's service, to run first in the
    /// process's service group: stopped last, it sends the spans of the requests and jobs that ended in the shutdown.
    static func bootstrap(serviceName: String, environment: EnvironmentReader = .process) throws -> (any Service)? {
        guard try isWanted(environment) else { return nil }
        let statements = try environment.bool("TRACE_STATEMENTS", default: false)
        let diagnostics = Logger(label: "carbscan.otel")
        let warn: (String) -> Void = { diagnostics.warning("\($0)") }
        let sampling = try sampling(environment, warn: warn)
        let propagates = try propagates(environment)
        let (options, batch) = exportOptions(environment, serviceName: serviceName, warn: warn)
        let recorder = SpanRecorder(batch: batch)
        InstrumentationSystem.bootstrap(recorder)
        TraceSwitch.turnOn(recorder: recorder, statements: statements, sampling: sampling, propagates: propagates)
        return OTLPExporter(options: options, batch: batch, logger: diagnostics)
    }

    /// Where and how spans are sent, and the batch they wait in, from the OTLP exporter's and the batch span
    /// processor's variables (a signal's own `OTEL_EXPORTER_OTLP_TRACES_*` before the general one). A number that
    /// cannot be read is warned of and its default kept, as the specification asks.
    static func exportOptions(
        _ environment: EnvironmentReader, serviceName: String, warn: (String) -> Void
    ) -> (OTLPExportOptions, SpanBatch) {
        /// The signal's own variable if set, else the general one: which, and its value.
        func traces(_ name: String) -> (variable: String, text: String)? {
            for variable in ["OTEL_EXPORTER_OTLP_TRACES_\(name)", "OTEL_EXPORTER_OTLP_\(name)"] {
                if let text = environment.text(variable) { return (variable, text) }
            }
            return nil
        }
        func milliseconds(_ setting: (variable: String, text: String)?, default fallback: Int) -> Int {
            guard let (variable, text) = setting else { return fallback }
            guard let number = Int(text), number >= 0 else {
                warn("\(variable): '\(text)' is not a whole number of milliseconds; \(fallback) is used")
                return fallback
            }
            return number
        }
        func processor(_ variable: String) -> (variable: String, text: String)? { environment.text(variable).map { (variable, $0) } }
        func count(_ name: String, default fallback: Int) -> Int {
            guard let text = environment.text(name) else { return fallback }
            guard let number = Int(text), number > 0 else {
                warn("\(name): '\(text)' is not a whole number above 0; \(fallback) is used")
                return fallback
            }
            return number
        }
        let endpoint: String
        if let whole = environment.text("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = whole
        } else {
            let base = environment.text("OTEL_EXPORTER_OTLP_ENDPOINT") ?? "http://localhost:4318"
            endpoint = base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces"
        }
        let headers = traces("HEADERS")
        let options = OTLPExportOptions(
            endpoint: endpoint,
            headers: pairs(headers?.text, of: headers?.variable ?? "", warn: warn).map { (name: $0.key, value: $0.value) },
            timeout: .milliseconds(milliseconds(traces("TIMEOUT"), default: 10_000)),
            certificate: traces("CERTIFICATE")?.text,
            scheduleDelay: .milliseconds(milliseconds(processor("OTEL_BSP_SCHEDULE_DELAY"), default: 5000)),
            exportTimeout: .milliseconds(milliseconds(processor("OTEL_BSP_EXPORT_TIMEOUT"), default: 30_000)),
            resource: resource(environment, serviceName: serviceName, warn: warn),
            version: BuildVersion.current)
        let batch = SpanBatch(
            capacity: count("OTEL_BSP_MAX_QUEUE_SIZE", default: 2048), exportSize: count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", default: 512))
        return (options, batch)
    }

    /// The resource's attributes: `service.name` (`OTEL_SERVICE_NAME`, else the attributes', else the command's),
    /// `service.version` (`CARBSCAN_VERSION`), `OTEL_RESOURCE_ATTRIBUTES`, and the SDK's `telemetry.sdk.*`.
    static func resource(_ environment: EnvironmentReader, serviceName: String, warn: (String) -> Void) -> [(key: String, value: String)] {
        var attributes = [
            ("service.version", BuildVersion.current), ("telemetry.sdk.name", "carbscan"), ("telemetry.sdk.language", "swift"),
            ("telemetry.sdk.version", BuildVersion.current),
        ].map { (key: $0.0, value: $0.1) }
        for pair in pairs(environment.text("OTEL_RESOURCE_ATTRIBUTES"), of: "OTEL_RESOURCE_ATTRIBUTES", warn: warn) {
            attributes.removeAll { $0.key == pair.key }
            attributes.append(pair)
        }
        let name = environment.text("OTEL_SERVICE_NAME") ?? attributes.first { $0.key == "service.name" }?.value ?? serviceName
        attributes.removeAll { $0.key == "service.name" }
        return [(key: "service.name", value: name)] + attributes
    }

    /// `key=value` pairs separated by commas, values percent-decoded (W3C Baggage's format, which
    /// `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_EXPORTER_OTLP_HEADERS` use). A pair without `=`, or with an empty key, is
    /// warned of and left out; its value is never logged (a header may be a key).
    static func pairs(_ text: String?, of variable: String, warn: (String) -> Void) -> [(key: String, value: String)] {
        guard let text else { return [] }
        var pairs: [(key: String, value: String)] = []
        for (index, item) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = parts[0].trimmingCharacters(in: .whitespaces)
            guard parts.count == 2, !key.isEmpty,
                let value = parts[1].trimmingCharacters(in: .whitespaces).removingPercentEncoding
            else {
                warn("\(variable): item \(index + 1) is not key=value; it is left out")
                continue
            }
            pairs.append((key: key, value: value))
        }
        return pairs
    }

    /// Whether contexts travel as W3C Trace Context (`OTEL_PROPAGATORS`: `tracecontext`, the default, or `none`).
    /// The others (`baggage`, `b3`, `b3multi`, `jaeger`, `xray`, `ottrace`) are refused by name rather than dropped
    /// in silence: a trace would break at this process.
    static func propagates(_ environment: EnvironmentReader) throws -> Bool {
        guard let text = environment.text("OTEL_PROPAGATORS") else { return true }
        let names = Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty })
        if names.contains("none") { return false }
        if let other = names.subtracting(["tracecontext"]).sorted().first {
            throw SettingError("OTEL_PROPAGATORS", "'\(other)' is not supported: tracecontext (the default) or none")
        }
        return true
    }

    /// The sampling decided before any span (`TraceSampling`), from `OTEL_TRACES_SAMPLER` and `_ARG`. A value that
    /// cannot be read is warned of and the default kept (`parentbased_always_on`, a ratio of 1), as the specification
    /// asks; the samplers that need a remote (Jaeger's, X-Ray's) are refused.
    static func sampling(_ environment: EnvironmentReader, warn: (String) -> Void) throws -> TraceSampling {
        let name = environment.text("OTEL_TRACES_SAMPLER")?.lowercased() ?? "parentbased_always_on"
        if ["jaeger_remote", "parentbased_jaeger_remote", "xray"].contains(name) {
            throw SettingError("OTEL_TRACES_SAMPLER", "'\(name)' is not supported: always_on, always_off, traceidratio or parentbased_*")
        }
        func ratio() -> Double {
            guard let text = environment.text("OTEL_TRACES_SAMPLER_ARG") else { return 1 }
            guard let ratio = Double(text), (0...1).contains(ratio) else {
                warn("OTEL_TRACES_SAMPLER_ARG: '\(text)' is not a ratio from 0 to 1; 1 is used")
                return 1
            }
            return ratio
        }
        switch name {
        case "always_on": return TraceSampling(followsParent: false, ratio: 1)
        case "always_off": return TraceSampling(followsParent: false, ratio: 0)
        case "traceidratio": return TraceSampling(followsParent: false, ratio: ratio())
        case "parentbased_always_on": return TraceSampling(followsParent: true, ratio: 1)
        case "parentbased_always_off": return TraceSampling(followsParent: true, ratio: 0)
        case "parentbased_traceidratio": return TraceSampling(followsParent: true, ratio: ratio())
        default:
            warn("OTEL_TRACES_SAMPLER: '\(name)' is not a known sampler; parentbased_always_on is used")
            return TraceSampling(followsParent: true, ratio: 1)
        }
    }

    /// `services` behind the exporter's service, when tracing is on: a service group stops its services in reverse.
    static func first(
        _ tracing: (any Service)?, _ services: [ServiceGroupConfiguration.ServiceConfiguration]
    ) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        guard let tracing else { return services }
        return [.init(service: tracing)] + services
    }
}
