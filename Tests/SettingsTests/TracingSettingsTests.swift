import Settings
import Testing

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
}
