import Synchronization

/// Which traces are sampled, decided here, before swift-otel is asked for a span, so that a request or a job whose
/// trace the sampler drops costs no span at all: only its `traceparent`, flags 00, carried along (`DroppedTrace`).
///
/// swift-otel 1.6 makes a span for every dropped request too (new ids from a locked generator, a context, a no-op
/// span, the propagator's injection for the job's record), and that was most of what tracing at 10% cost:
/// `ops/bench/tracing.sh`, 2026-11-28, serve's CPU per request +20% (GET /meals) and +33% (POST /logins), a no-op
/// job's +59%. Its sampler cannot be replaced through `OTel.bootstrap`, so this one takes the decision for the
/// standard `OTEL_TRACES_SAMPLER` values and swift-otel is told `always_on`: it is asked only for what is sampled.
/// The decision is the specification's: parent-based samplers follow the parent's flag; ratio sampling compares the
/// trace id's last 8 bytes (big-endian) against the ratio, so every process of a trace decides alike. One departure:
/// `traceidratio` (not parent-based) keeps a trace whose parent was sampled, see `dropped(parent:tracestate:)`.
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

    /// The trace this sampling drops, as it then travels: `parent` (the request's or the job's `traceparent`, if it
    /// had a valid one) with its sampled flag cleared, or a new trace's. Nil when the trace is sampled: swift-otel
    /// then starts the span, continuing `parent`.
    public func dropped(parent: Traceparent?, tracestate: String? = nil) -> DroppedTrace? {
        if let parent {
            let sampled: Bool
            if followsParent {
                sampled = parent.isSampled
            } else if bound == 0 {
                sampled = false  // always_off
            } else {
                // A sampled parent is kept: a trace started here was drawn on an id of this sampler's, not on the one
                // swift-otel then gives it, so its jobs' runs must not be drawn again on that one.
                sampled = parent.isSampled || admits(parent.traceIDLow)
            }
            return sampled ? nil : DroppedTrace(traceparent: parent.unsampled, tracestate: tracestate)
        }
        if bound == .max { return nil }
        let ids = RandomIDs.next()
        if admits(ids.traceLow) { return nil }
        return DroppedTrace(traceparent: Traceparent(traceHigh: ids.traceHigh, traceLow: ids.traceLow, span: ids.span), tracestate: nil)
    }

    private func admits(_ traceIDLow: UInt64) -> Bool { bound == .max || traceIDLow < bound }
}

/// A trace the sampler dropped, as this process carries it: what it propagates (to a job's record, to an outbound
/// call) and what its log lines name. No span is made for it.
public struct DroppedTrace: Sendable, Equatable {
    public let traceparent: Traceparent
    public let tracestate: String?

    /// What the propagators would send: `traceparent`, and `tracestate` when the trace came with one.
    public var fields: [String: String] {
        var fields = ["traceparent": traceparent.text]
        if let tracestate { fields["tracestate"] = tracestate }
        return fields
    }

    /// As a job's record carries a trace context (`TraceCarrier`): `name=value` lines, sorted by name.
    public var carried: String {
        tracestate.map { "traceparent=\(traceparent.text)\ntracestate=\($0)" } ?? "traceparent=\(traceparent.text)"
    }
}

private enum DroppedTraceKey: InstrumentationContextKey {
    typealias Value = DroppedTrace
    static var nameOverride: String? { "carbscan.dropped-trace" }
}

extension InstrumentationContext {
    /// The trace the sampler dropped that this context belongs to, if it does.
    public var droppedTrace: DroppedTrace? {
        get { self[DroppedTraceKey.self] }
        set { self[DroppedTraceKey.self] = newValue }
    }

    /// A context holding only `trace`.
    public static func dropped(_ trace: DroppedTrace) -> InstrumentationContext {
        var context = InstrumentationContext.topLevel
        context.droppedTrace = trace
        return context
    }
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
