import Settings
import Testing
import TraceExport
import Traces

@testable import carbscan

/// The standard `OTEL_` variables decide whether a process traces: off without an endpoint, off when told so, and a
/// clear refusal for what this build cannot export (swift-otel would stop the process inside its exporter).
@Suite struct TracingSettingsTests {
    @Test func offWithoutAnEndpoint() throws {
        #expect(try !TracingSetup.isWanted([:]))
        #expect(try !TracingSetup.isWanted(["OTEL_SERVICE_NAME": "api", "OTEL_TRACES_SAMPLER": "always_on"]))
        #expect(try !TracingSetup.isWanted(["OTEL_EXPORTER_OTLP_ENDPOINT": "  "]))
    }

    @Test func onWithEitherEndpoint() throws {
        #expect(try TracingSetup.isWanted(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]))
        #expect(try TracingSetup.isWanted(["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"]))
        #expect(
            try TracingSetup.isWanted([
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_TRACES_EXPORTER": "otlp",
            ]))
    }

    @Test func offWhenToldSoWithAnEndpoint() throws {
        let endpoint = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]
        #expect(try !TracingSetup.isWanted(EnvironmentReader(endpoint.merging(["OTEL_TRACES_EXPORTER": "none"]) { $1 })))
        #expect(try !TracingSetup.isWanted(EnvironmentReader(endpoint.merging(["OTEL_SDK_DISABLED": "true"]) { $1 })))
    }

    @Test func whatThisBuildCannotExportIsRefusedByName() {
        let endpoint = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"]
        for (variable, value) in [
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"), ("OTEL_TRACES_EXPORTER", "zipkin"),
            ("OTEL_TRACES_EXPORTER", "console"),
        ] {
            #expect {
                try TracingSetup.isWanted(EnvironmentReader(endpoint.merging([variable: value]) { $1 }))
            } throws: { error in
                (error as? SettingError)?.variable == variable && "\(error)".contains(value)
            }
        }
    }

    /// The standard samplers are decided here (`TraceSampling`); an unreadable value is warned of and the default kept;
    /// Jaeger's and X-Ray's are refused by name.
    @Test func theSamplerIsDecidedHere() throws {
        let endpoint = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]
        func sampling(_ variables: [String: String]) throws -> (TraceSampling, [String]) {
            var warnings: [String] = []
            let sampling = try TracingSetup.sampling(EnvironmentReader(endpoint.merging(variables) { $1 })) { warnings.append($0) }
            return (sampling, warnings)
        }
        for (variables, expected) in [
            ([:], TraceSampling(followsParent: true, ratio: 1)),
            (
                ["OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"],
                TraceSampling(followsParent: true, ratio: 0.1)
            ),
            (["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"], TraceSampling(followsParent: false, ratio: 0.25)),
            (["OTEL_TRACES_SAMPLER": "parentbased_traceidratio"], TraceSampling(followsParent: true, ratio: 1)),
            (["OTEL_TRACES_SAMPLER": "parentbased_always_off"], TraceSampling(followsParent: true, ratio: 0)),
            (["OTEL_TRACES_SAMPLER": "always_off"], TraceSampling(followsParent: false, ratio: 0)),
            (["OTEL_TRACES_SAMPLER": "ALWAYS_ON"], TraceSampling(followsParent: false, ratio: 1)),
        ] {
            let (decided, warnings) = try sampling(variables)
            #expect(decided == expected && warnings.isEmpty, "\(variables)")
        }
        let (badRatio, ratioWarnings) = try sampling(["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"])
        #expect(badRatio == TraceSampling(followsParent: false, ratio: 1) && ratioWarnings.count == 1 && ratioWarnings[0].contains("1.5"))
        let (unknown, unknownWarnings) = try sampling(["OTEL_TRACES_SAMPLER": "sometimes"])
        #expect(unknown == TraceSampling(followsParent: true, ratio: 1) && unknownWarnings.count == 1)
        for name in ["jaeger_remote", "parentbased_jaeger_remote", "xray"] {
            #expect {
                try sampling(["OTEL_TRACES_SAMPLER": name])
            } throws: { error in
                (error as? SettingError)?.variable == "OTEL_TRACES_SAMPLER" && "\(error)".contains(name)
            }
        }
    }

    /// W3C Trace Context travels unless `OTEL_PROPAGATORS=none`; the propagators not built in are refused by name,
    /// before anything starts (a trace would break at this process), and so is compression.
    @Test func propagatorsAreW3COrNone() throws {
        let endpoint = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]
        for (value, propagates) in [
            (nil, true), ("tracecontext", true), (" TraceContext , ", true), ("none", false), ("tracecontext,none", false),
        ] {
            let variables = endpoint.merging(value.map { ["OTEL_PROPAGATORS": $0] } ?? [:]) { $1 }
            #expect(try TracingSetup.propagates(EnvironmentReader(variables)) == propagates, "\(value ?? "nil")")
            #expect(try TracingSetup.isWanted(EnvironmentReader(variables)))
        }
        for value in ["b3", "tracecontext,baggage", "jaeger", "xray", "b3multi"] {
            #expect {
                try TracingSetup.isWanted(EnvironmentReader(endpoint.merging(["OTEL_PROPAGATORS": value]) { $1 }))
            } throws: { error in
                (error as? SettingError)?.variable == "OTEL_PROPAGATORS" && "\(error)".contains(value.split(separator: ",").last!)
            }
        }
        for variable in ["OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"] {
            #expect(try TracingSetup.isWanted(EnvironmentReader(endpoint.merging([variable: "none"]) { $1 })))
            #expect {
                try TracingSetup.isWanted(EnvironmentReader(endpoint.merging([variable: "gzip"]) { $1 }))
            } throws: { error in
                (error as? SettingError)?.variable == variable
            }
        }
    }

    /// The exporter's and the batch processor's variables, as the specification defines them: `/v1/traces` added to
    /// the general endpoint only, a signal's own variable first, milliseconds, and a warning (never the value: a
    /// header may be a key) with the default for what cannot be read.
    @Test func theExporterIsConfiguredByTheStandardVariables() {
        var warnings: [String] = []
        func options(_ variables: [String: String]) -> (OTLPExportOptions, SpanBatch) {
            TracingSetup.exportOptions(EnvironmentReader(variables), serviceName: "carbscan-api") { warnings.append($0) }
        }
        let (defaults, defaultBatch) = options(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"])
        #expect(defaults.endpoint == "http://collector:4318/v1/traces" && defaults.headers.isEmpty && defaults.certificate == nil)
        #expect(defaults.timeout == .seconds(10) && defaults.scheduleDelay == .seconds(5) && defaults.exportTimeout == .seconds(30))
        #expect(defaultBatch.capacity == 2048 && defaultBatch.exportSize == 512 && warnings.isEmpty)
        #expect(
            options(["OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318/otlp/"]).0.endpoint == "https://collector:4318/otlp/v1/traces")
        let (set, batch) = options([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://ignored:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/custom",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-general=1",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-team = k%3Dv%2C1 ,Authorization=Bearer%20s3cr3t",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "/etc/ca.pem", "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OTEL_BSP_EXPORT_TIMEOUT": "1000", "OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "500",
        ])
        #expect(set.endpoint == "http://collector:4318/custom" && set.certificate == "/etc/ca.pem")
        #expect(set.headers.map { "\($0.name)=\($0.value)" } == ["x-team=k=v,1", "Authorization=Bearer s3cr3t"])
        #expect(set.timeout == .milliseconds(2500) && set.scheduleDelay == .milliseconds(200) && set.exportTimeout == .seconds(1))
        // A batch larger than the queue is the queue's size.
        #expect(batch.capacity == 100 && batch.exportSize == 100 && warnings.isEmpty)
        let (bad, badBatch) = options([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s", "OTEL_BSP_MAX_QUEUE_SIZE": "0",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s3cr3t,broken s3cr3t2",
        ])
        #expect(bad.timeout == .seconds(10) && badBatch.capacity == 2048 && bad.headers.map(\.name) == ["api-key"])
        #expect(warnings.count == 3 && !warnings.joined().contains("s3cr3t"), "\(warnings)")
    }

    /// The resource: `OTEL_SERVICE_NAME` before `OTEL_RESOURCE_ATTRIBUTES`' `service.name` before the command's name;
    /// the build's version and the SDK's attributes, which the variable may replace.
    @Test func theResourceNamesTheServiceAndTheSDK() {
        func resource(_ variables: [String: String]) -> [String: String] {
            let attributes = TracingSetup.resource(EnvironmentReader(variables), serviceName: "carbscan-worker") { _ in }
            #expect(attributes.first?.key == "service.name")
            return Dictionary(attributes.map { ($0.key, $0.value) }) { $1 }
        }
        let plain = resource([:])
        #expect(plain["service.name"] == "carbscan-worker" && plain["telemetry.sdk.language"] == "swift" && plain["service.version"] != nil)
        let named = resource(["OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attributes,deployment.environment.name=prod%20eu"])
        #expect(named["service.name"] == "from-attributes" && named["deployment.environment.name"] == "prod eu")
        #expect(resource(["OTEL_RESOURCE_ATTRIBUTES": "service.name=a", "OTEL_SERVICE_NAME": "b"])["service.name"] == "b")
    }
}
