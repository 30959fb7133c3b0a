import Synchronization

@_exported import Tracing

/// Whether this process traces: switched on once at start-up, before any span, by the command that bootstrapped
/// OpenTelemetry (`OTEL_EXPORTER_OTLP_ENDPOINT` set). Off, the hot paths (an enqueue, a job's run, a statement, an
/// outbound call) skip spans and propagation altogether: not even the no-op tracer is called.
public enum TraceSwitch {
    private static let state = Atomic<Bool>(false)
    /// Written once, before `state` turns on (whose releasing store publishes it); read only after seeing it on.
    nonisolated(unsafe) private static var sampled: @Sendable (InstrumentationContext) -> Bool = { _ in false }
    /// Written once, like `sampled`: whether statements and scripts get spans of their own (`TRACE_STATEMENTS`).
    nonisolated(unsafe) private static var statements = false
    /// Written once, like `sampled`: the decision taken before swift-otel is asked (nil: swift-otel's own sampler).
    nonisolated(unsafe) private static var sampling: TraceSampling?

    public static var isOn: Bool { state.load(ordering: .acquiring) }

    /// Called by the executable after `InstrumentationSystem.bootstrap`, never by a library. `isSampled` tells whether
    /// a context's span is sampled (the tracer's own flag).
    /// `statements`: Postgres statements and Redis scripts get spans of their own in sampled traces.
    /// `sampling`: which traces are dropped before any span (`TraceSampling`); nil leaves it to the tracer's sampler.
    public static func turnOn(
        statements: Bool = false, sampling: TraceSampling? = nil, isSampled: @escaping @Sendable (InstrumentationContext) -> Bool
    ) {
        sampled = isSampled
        Self.statements = statements
        Self.sampling = sampling
        state.store(true, ordering: .releasing)
    }

    /// Whether a sampled span is current. The libraries' own spans (a statement, a script, an outbound call, an
    /// enqueue inside a request) are made only then: a health check or a worker's fetch is no trace, and a span under
    /// one the sampler dropped would be dropped too (the samplers are parent-based: the default and the deploy kit's)
    /// after costing its ids, its context and its attributes. Unsampled, the context still travels (`traceparent`).
    public static var inSampledTrace: Bool {
        guard isOn, let context = InstrumentationContext.current else { return false }
        return sampled(context)
    }

    /// Whether a statement or a script run now gets a span: inside a sampled trace, in a process that asked for them
    /// (`TRACE_STATEMENTS=true`). Off by default: a recorded span costs swift-otel some 30–40 µs of CPU, about what
    /// the statement itself costs, and a chat runs several (`ops/bench/tracing.sh`, 2026-11-27).
    public static var inSampledStatementTrace: Bool { statements && inSampledTrace }

    /// The trace a request or a job starts or continues, when the sampler drops it: `traceparent` and `tracestate`
    /// are what it came with (the request's headers, the job's record), nil for none. Nil when it is sampled, and
    /// always when tracing is off or the tracer's own sampler decides: the caller then starts its span.
    public static func dropped(traceparent: Substring?, tracestate: Substring?) -> DroppedTrace? {
        guard isOn, let sampling else { return nil }
        // An invalid traceparent is no parent, and its tracestate is ignored with it (W3C Trace Context §3.3).
        guard let parent = traceparent.flatMap(Traceparent.init) else { return sampling.dropped(parent: nil) }
        return sampling.dropped(parent: parent, tracestate: tracestate.map(String.init))
    }

    /// A new trace's (a job enqueued outside any request, a job run that carries no trace), when the sampler drops it.
    public static func droppedRoot() -> DroppedTrace? { dropped(traceparent: nil, tracestate: nil) }

    /// Whether `context`'s span is sampled (false while tracing is off).
    public static func isSampled(_ context: InstrumentationContext) -> Bool { isOn && sampled(context) }
}
