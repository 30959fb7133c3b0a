import Testing
import Traces

/// A trace context carried as text in a job's record, and the trace id operators are shown from it.
@Suite struct TraceCarrierTests {
    @Test func theTraceIDOfACarriedTraceparent() {
        let carried =
            "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ntracestate=congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
        #expect(TraceCarrier.traceID(of: carried) == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(TraceCarrier.traceFields(of: carried[...]).tracestate == "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
    }

    /// What a worker decides a job's trace on, read in place from the job's record.
    @Test func aCarriedTextsFieldsAreReadInPlace() {
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let both = TraceCarrier.traceFields(of: "traceparent=\(traceparent)\ntracestate=congo=t61rcWkgMzE"[...])
        #expect(both.traceparent == traceparent[...] && both.tracestate == "congo=t61rcWkgMzE")
        let one = TraceCarrier.traceFields(of: "b3=1-2-3\ntraceparent=\(traceparent)\nnoise"[...])
        #expect(one.traceparent == traceparent[...] && one.tracestate == nil)
        let none = TraceCarrier.traceFields(of: "tracestate=a=1"[...])
        #expect(none.traceparent == nil && none.tracestate == "a=1")
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
