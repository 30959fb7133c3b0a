import Synchronization
@_exported import Tracing

/// Whether this process traces: switched on once at start-up, before any span, by the command that bootstrapped
/// the span recorder (`OTEL_EXPORTER_OTLP_ENDPOINT` set). Off, the hot paths (an enqueue, a job's run, a statement, an
/// outbound call) skip spans and propagation altogether: not even the no-op tracer is called.
public enum TraceSwitch {
    private static let state = Atomic<Bool>(false)
    /// Written once, before `state` turns on (whose releasing store publishes it); read only after seeing it on:
    /// whether statements and scripts get spans of their own (`TRACE_STATEMENTS`).
    nonisolated(unsafe) private static var statements = false
    /// Written once, like `statements`: which traces are dropped before any span.
    nonisolated(unsafe) private static var sampling = TraceSampling(followsParent: true, ratio: 1)
    /// Written once, like `statements`: whether contexts travel as W3C `traceparent` (`OTEL_PROPAGATORS` not `none`).
    nonisolated(unsafe) private static var propagates = true
    /// Written once, like `statements`: the process's tracer, also bootstrapped as `InstrumentationSystem`'s.
    nonisolated(unsafe) private static var recorder = SpanRecorder(batch: SpanBatch(capacity: 1, exportSize: 1))

    public static var isOn: Bool { state.load(ordering: .acquiring) }

    /// Called by the executable after `InstrumentationSystem.bootstrap(recorder)`, never by a library.
    /// `statements`: Postgres statements and Redis scripts get spans of their own in sampled traces.
    /// `sampling`: which traces are dropped before any span (`TraceSampling`).
    /// `propagates`: a request's and a job's `traceparent` is read, and spans' contexts are sent on; false for
    /// `OTEL_PROPAGATORS=none`, where every request and job starts a trace of its own.
    public static func turnOn(recorder: SpanRecorder, statements: Bool = false, sampling: TraceSampling, propagates: Bool = true) {
        Self.recorder = recorder
        Self.statements = statements
        Self.sampling = sampling
        Self.propagates = propagates
        state.store(true, ordering: .releasing)
    }

    /// Whether a sampled span is current. The libraries' own spans (a statement, a script, an outbound call, an
    /// enqueue inside a request) are made only then: a health check or a worker's fetch is no trace, and a span under
    /// a dropped trace would cost its ids, its context and its attributes for nothing. Unsampled, the context still
    /// travels (`traceparent`).
    public static var inSampledTrace: Bool {
        isOn && CurrentTrace.spanIdentity?.isSampled == true
    }

    /// Whether a statement or a script run now gets a span: inside a sampled trace, in a process that asked for them
    /// (`TRACE_STATEMENTS=true`). Off by default: a chat runs several statements, each about as cheap as its span.
    public static var inSampledStatementTrace: Bool { statements && inSampledTrace }

    /// Whether the trace a request or a job starts or continues is sampled: `traceparent` and `tracestate` are what
    /// it came with (the request's headers, the job's record), nil for none. Nil while tracing is off.
    public static func decide(traceparent: Substring?, tracestate: Substring?) -> TraceDecision? {
        guard isOn else { return nil }
        // An invalid traceparent is no parent, and its tracestate is ignored with it (W3C Trace Context §3.3).
        guard propagates, let parent = traceparent.flatMap(Traceparent.init) else { return sampling.decide(parent: nil) }
        return sampling.decide(parent: parent, tracestate: tracestate.map(String.init))
    }

    /// Whether contexts travel (`OTEL_PROPAGATORS` is not `none`); false while tracing is off.
    static var isPropagating: Bool { isOn && propagates }

    /// Whether this process traces but sends no context on (`OTEL_PROPAGATORS=none`): not even a dropped trace's.
    static var withholdsContext: Bool { isOn && !propagates }

    /// Whether `context`'s span is sampled (false while tracing is off).
    public static func isSampled(_ context: InstrumentationContext) -> Bool { isOn && context.spanIdentity?.isSampled == true }

    /// A span from the process's recorder, directly: the libraries' spans skip `InstrumentationSystem`'s lock and its
    /// existential tracer (1% of the API's CPU at 100% sampling, perf 2026-11-28). Only while tracing is on.
    public static func startSpan(
        _ name: String, context: InstrumentationContext? = nil, ofKind kind: SpanKind,
        at instant: DefaultTracerClock.Instant = DefaultTracerClock.now
    ) -> RecorderSpan {
        if context == nil, case .span(let parent)? = CurrentTrace.current {
            return recorder.startSpan(name, under: parent, ofKind: kind, at: instant.nanosecondsSinceEpoch)
        }
        return recorder.startSpan(name, context: context ?? .current ?? .topLevel, ofKind: kind, at: instant)
    }

    /// The first span of a sampled trace in this process (a request's, a job's), under the parent the sampler decided
    /// on (`decide`).
    public static func startSpan(
        _ name: String, parent: SampledParent, ofKind kind: SpanKind, at instant: DefaultTracerClock.Instant = DefaultTracerClock.now
    ) -> RecorderSpan {
        recorder.startSpan(name, parent: parent, ofKind: kind, at: instant.nanosecondsSinceEpoch)
    }

    /// `body` inside a span from the process's recorder (current while it runs, ended after it, an error recorded).
    public static func withSpan<T>(
        _ name: String, context: InstrumentationContext? = nil, ofKind kind: SpanKind, isolation: isolated (any Actor)? = #isolation,
        _ body: (RecorderSpan) async throws -> T
    ) async rethrows -> T {
        try await within(startSpan(name, context: context, ofKind: kind), isolation: isolation, body)
    }

    /// `body` inside the first span of a sampled trace in this process (`startSpan(_:parent:ofKind:at:)`).
    public static func withSpan<T>(
        _ name: String, parent: SampledParent, ofKind kind: SpanKind, isolation: isolated (any Actor)? = #isolation,
        _ body: (RecorderSpan) async throws -> T
    ) async rethrows -> T {
        try await within(startSpan(name, parent: parent, ofKind: kind), isolation: isolation, body)
    }

    private static func within<T>(
        _ span: RecorderSpan, isolation: isolated (any Actor)?, _ body: (RecorderSpan) async throws -> T
    ) async rethrows -> T {
        defer { span.end() }
        do {
            return try await current(span, isolation: isolation) { try await body(span) }
        } catch {
            span.recordError(error)
            throw error
        }
    }

    /// `body` with `span` current: a recorded span as ``CurrentTrace``, an unrecorded one's context (its parent's) as
    /// `InstrumentationContext`'s, with no trace of this process's over it.
    @inlinable
    public static func current<T>(
        _ span: RecorderSpan, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        switch span {
        case .recorded(let recorded):
            return try await CurrentTrace.local.withValue(.span(recorded), operation: body, isolation: isolation)
        case .unrecorded(let context):
            return try await CurrentTrace.local.withValue(
                nil,
                operation: { try await InstrumentationContext.$current.withValue(context, operation: body, isolation: isolation) },
                isolation: isolation)
        }
    }
}
