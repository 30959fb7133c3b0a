import Testing
import Traces

/// A trace context carried as text in a job's record, and the trace id operators are shown from it.
@Suite struct TraceCarrierTests {
    @Test func theTraceIDOfACarriedTraceparent() {
        let carried =
            "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ntracestate=congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
        #expect(TraceCarrier.traceID(of: carried) == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(TraceCarrier.fields(of: carried)["tracestate"] == "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
    }

    @Test func nothingIsShownForWhatIsNoTraceparent() {
        for text in [
            nil, "", "b3=80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1", "traceparent=00-xyz-00f067aa0ba902b7-01",
            "traceparent=00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "traceparent",
        ] {
            #expect(TraceCarrier.traceID(of: text) == nil, "\(text ?? "nil")")
        }
    }

    /// Off (no `OTEL_` endpoint, as in this test process), nothing is carried and every context is empty.
    @Test func offNothingIsCarried() {
        #expect(!TraceSwitch.isOn && !TraceSwitch.inSampledTrace)
        #expect(TraceCarrier.current() == nil)
        #expect(TraceCarrier.context(from: "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").isEmpty)
    }
}
