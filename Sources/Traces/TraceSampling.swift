import Synchronization

/// Which traces are sampled, decided before any span is made, so that a request or a job whose trace the sampler
/// drops costs no span at all: only its `traceparent`, flags 00, carried along (`DroppedTrace`).
///
/// The decision is the specification's for the standard `OTEL_TRACES_SAMPLER` values: parent-based samplers follow
/// the parent's flag; ratio sampling compares the trace id's last 8 bytes (big-endian) against the ratio, so every
/// process of a trace decides alike. A new trace kept here is started on the very ids the ratio was drawn on
/// (``TraceDecision/sampled(_:)`` carries them to `SpanRecorder`), so a worker that draws again on its trace id keeps
/// it too.
public struct TraceSampling: Sendable, Equatable {
    /// The `parentbased_*` samplers: a parent's sampled flag decides, the ratio only for a new trace.
    public let followsParent: Bool
    /// The share of traces sampled where the parent does not decide, 0…1.
    public let ratio: Double
    private let bound: UInt64

    public init(followsParent: Bool, ratio: Double) {
        self.followsParent = followsParent
        self.ratio = min(max(ratio, 0), 1)
        bound = self.ratio >= 1 ? .max : UInt64(self.ratio * Double(UInt64.max))
    }

    /// Whether the trace of `parent` (the request's or the job's `traceparent`, if it had a valid one), or a new trace
    /// for none, is sampled: dropped, it travels as `parent` with its sampled flag cleared, or as a new trace's ids;
    /// sampled, the context its first span starts in.
    public func decide(parent: Traceparent?, tracestate: String? = nil) -> TraceDecision {
        if let parent {
            let sampled = followsParent ? parent.isSampled : admits(parent.traceIDLow)
            guard sampled else { return .dropped(DroppedTrace(traceparent: parent.unsampled, tracestate: tracestate)) }
            return .sampled(SampledParent(remote: SpanIdentity(remote: parent, tracestate: tracestate)))
        }
        let ids = RandomIDs.next()
        guard admits(ids.traceLow) else {
            return .dropped(
                DroppedTrace(traceparent: Traceparent(traceHigh: ids.traceHigh, traceLow: ids.traceLow, span: ids.span), tracestate: nil))
        }
        return .sampled(SampledParent(root: SampledRoot(traceHigh: ids.traceHigh, traceLow: ids.traceLow)))
    }

    /// The trace ``decide(parent:tracestate:)`` drops, nil when it is sampled.
    public func dropped(parent: Traceparent?, tracestate: String? = nil) -> DroppedTrace? {
        guard case .dropped(let trace) = decide(parent: parent, tracestate: tracestate) else { return nil }
        return trace
    }

    private func admits(_ traceIDLow: UInt64) -> Bool { bound == .max || traceIDLow < bound }
}

/// What the sampler decided for a request's or a job's trace.
public enum TraceDecision: Sendable {
    /// No span: only the context travels.
    case dropped(DroppedTrace)
    /// Its span starts under this parent: the remote parent, or a new trace's ids.
    case sampled(SampledParent)
}

/// Where the first span of a sampled trace in this process starts: under the remote parent a request or a job
/// carried, or as the root of a new trace on the ids the sampler drew. Kept apart from an `InstrumentationContext`
/// until the span is made: each of a context's values is a dictionary entry, looked up through an unspecialized generic
/// and a dynamic cast, and a context made for the decision only to be read, copied and changed by the span was a third
/// of what starting a span cost (perf, 2026-11-29).
public struct SampledParent: Sendable {
    let remote: SpanIdentity?
    let root: SampledRoot?

    init(remote: SpanIdentity) {
        self.remote = remote
        root = nil
    }

    init(root: SampledRoot) {
        remote = nil
        self.root = root
    }

    /// As a context, for code that binds it before a span is made (an enqueue that starts a trace).
    public var context: InstrumentationContext {
        var context = InstrumentationContext.topLevel
        if let remote { context.spanIdentity = remote }
        if let root { context.sampledRoot = root }
        return context
    }
}

/// A trace the sampler dropped, as this process carries it: what it propagates (to a job's record, to an outbound
/// call) and what its log lines name. No span is made for it.
public struct DroppedTrace: Sendable, Equatable {
    public let traceparent: Traceparent
    public let tracestate: String?

    /// What the propagators would send: `traceparent`, and `tracestate` when the trace came with one.
    public var fields: [String: String] { traceparent.fields(tracestate: tracestate) }

    /// As a job's record carries a trace context (`TraceCarrier`): `name=value` lines, sorted by name.
    public var carried: String { traceparent.carried(tracestate: tracestate) }

    /// What a job enqueued in this trace carries: ``carried``, or nil where contexts do not travel
    /// (`OTEL_PROPAGATORS=none`).
    public var travelling: String? { TraceSwitch.isPropagating ? carried : nil }
}

/// Ids for traces started here and dropped: splitmix64 over a counter from a random start, without a lock or a
/// system call (no two alike in a process; what W3C asks of a trace id's randomness, its last 7 bytes random-looking).
enum RandomIDs {
    private static let counter = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    static func next() -> (traceHigh: UInt64, traceLow: UInt64, span: UInt64) {
        let start = counter.wrappingAdd(3 &* 0x9E37_79B9_7F4A_7C15, ordering: .relaxed).oldValue
        let ids = (mix(start), mix(start &+ 0x9E37_79B9_7F4A_7C15), mix(start &+ 2 &* 0x9E37_79B9_7F4A_7C15))
        // All-zero ids are invalid.
        return (ids.0, ids.1 | (ids.0 == 0 ? 1 : 0), ids.2 == 0 ? 1 : ids.2)
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
