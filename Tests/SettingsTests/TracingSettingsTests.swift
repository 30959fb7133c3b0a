import Settings
import Testing
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

    /// The standard samplers are decided here (`TraceSampling`) and swift-otel is told `always_on`; an unreadable value
    /// is warned of and the default kept; Jaeger's and X-Ray's are refused by name.
    @Test func theSamplerIsDecidedHereAndSwiftOTelSamplesWhatItIsAskedFor() throws {
        let endpoint = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]
        func sampling(_ variables: [String: String]) throws -> (TraceSampling?, [String: String], [String]) {
            var warnings: [String] = []
            let (sampling, values) = try TracingSetup.sampling(EnvironmentReader(endpoint.merging(variables) { $1 })) {
                warnings.append($0)
            }
            return (sampling, values, warnings)
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
            (["OTEL_TRACES_SAMPLER": "ALWAYS_ON", "OTEL_PROPAGATORS": "tracecontext"], TraceSampling(followsParent: false, ratio: 1)),
        ] {
            let (decided, values, warnings) = try sampling(variables)
            #expect(decided == expected, "\(variables)")
            #expect(values["OTEL_TRACES_SAMPLER"] == "always_on" && values["OTEL_TRACES_SAMPLER_ARG"] == nil, "\(variables)")
            #expect(values["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://collector:4318" && warnings.isEmpty)
        }
        let (badRatio, _, ratioWarnings) = try sampling(["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"])
        #expect(badRatio == TraceSampling(followsParent: false, ratio: 1) && ratioWarnings.count == 1 && ratioWarnings[0].contains("1.5"))
        let (unknown, _, unknownWarnings) = try sampling(["OTEL_TRACES_SAMPLER": "sometimes"])
        #expect(unknown == TraceSampling(followsParent: true, ratio: 1) && unknownWarnings.count == 1)
        // Other propagators' contexts are swift-otel's to read: its sampler decides, as configured.
        let (other, untouched, _) = try sampling(["OTEL_PROPAGATORS": "tracecontext,b3", "OTEL_TRACES_SAMPLER": "traceidratio"])
        #expect(other == nil && untouched["OTEL_TRACES_SAMPLER"] == "traceidratio")
        // Whichever the propagators (swift-otel would stop the process on them).
        for name in ["jaeger_remote", "parentbased_jaeger_remote", "xray"] {
            for propagators in [[:], ["OTEL_PROPAGATORS": "b3"]] {
                #expect {
                    try sampling(propagators.merging(["OTEL_TRACES_SAMPLER": name]) { $1 })
                } throws: { error in
                    (error as? SettingError)?.variable == "OTEL_TRACES_SAMPLER" && "\(error)".contains(name)
                }
            }
        }
    }
}
