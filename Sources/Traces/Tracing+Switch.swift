import Synchronization
@_exported import Tracing

/// Whether this process traces: switched on once at start-up, before any span, by the command that bootstrapped
/// OpenTelemetry (`OTEL_EXPORTER_OTLP_ENDPOINT` set). Off, the hot paths (an enqueue, a job's run, a statement, an
/// outbound call) skip spans and propagation altogether: not even the no-op tracer is called.
public enum TraceSwitch {
    private static let state = Atomic<Bool>(false)

    public static var isOn: Bool { state.load(ordering: .relaxed) }

    /// Whether a span started now belongs to a trace: tracing is on and a span is current. The libraries' own spans
    /// (a statement, a script, an outbound call) start only then: a health check or a worker's fetch is no trace.
    public static var inTrace: Bool { isOn && InstrumentationContext.current != nil }

    /// Called by the executable after `InstrumentationSystem.bootstrap`, never by a library.
    public static func turnOn() { state.store(true, ordering: .relaxed) }
}
