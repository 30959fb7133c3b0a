/// The trace the running task is in, as this process binds it: a trace the sampler dropped (no span here, only its
/// context, bound where the decision is taken), or a span of this process that records (bound while its work runs).
///
/// A task-local of its own, not a value of an `InstrumentationContext`: a context holding one value allocates its
/// storage and boxes the value, and every read hashes the key and casts the value back. For a dropped trace that was
/// 3.4% of a worker's CPU on no-op jobs at 10% sampling (perf, 2026-11-28); for a recorded span, setting and reading
/// its identity there was 0.8 µs of the 8.2 µs it added to a no-op job (perf, 2026-12-07).
///
/// `InstrumentationContext.current` is still read where this is unbound: a context bound by a caller of the `Tracing`
/// API, or an unrecorded span's (a parent that is not sampled), which binds no trace here. A span a caller of the
/// `Tracing` API starts while one of this process's is current is that one's child (``SpanRecorder``); the lines
/// written inside it carry the span bound here.
public enum CurrentTrace: Sendable {
    case dropped(DroppedTrace)
    case span(RecordedSpan)

    /// The task-local, bound as any other (`CurrentTrace.local.withValue`): `@TaskLocal` written out, so that
    /// ``current`` reads it without counting.
    public static let local = TaskLocal<CurrentTrace?>(wrappedValue: nil)
    /// The same object, held without counting. Read through `local`, the object, one shared by every thread, was
    /// retained and released by each read, its count going from core to core (perf, 2026-12-08). It lives as long as
    /// the process.
    private static let uncounted = Unmanaged.passUnretained(local)

    /// The running task's.
    public static var current: CurrentTrace? { uncounted._withUnsafeGuaranteedRef { $0.get() } }

    /// The trace the sampler dropped that the running task is in.
    public static var dropped: DroppedTrace? {
        guard case .dropped(let trace)? = current else { return nil }
        return trace
    }

    /// The current span's identity: this process's recorded span's, or the one a bound `InstrumentationContext`
    /// holds (a remote parent, an unrecorded span's); nil in a dropped trace and outside any.
    static var spanIdentity: SpanIdentity? {
        switch current {
        case .span(let span): span.identity
        case .dropped: nil
        case nil: InstrumentationContext.current?.spanIdentity
        }
    }
}
