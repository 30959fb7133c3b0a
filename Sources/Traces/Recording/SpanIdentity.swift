/// A span's identity as its context carries it: the trace and span ids, whether the trace is sampled, and the
/// `tracestate` it continues. Held in an `InstrumentationContext` (``InstrumentationContext/spanIdentity``) by a span
/// recorded here and by a parent extracted from a request's or a job's `traceparent` (`isRemote`).
public struct SpanIdentity: Sendable, Hashable {
    public let traceHigh: UInt64
    public let traceLow: UInt64
    public let spanID: UInt64
    public let isSampled: Bool
    /// The vendors' `tracestate` list, passed on as received (W3C Trace Context §3.3).
    public let tracestate: String?
    /// Whether it came from another process (a request's header, a job's record) rather than a span of this one.
    public let isRemote: Bool

    public init(traceHigh: UInt64, traceLow: UInt64, spanID: UInt64, isSampled: Bool, tracestate: String?, isRemote: Bool) {
        self.traceHigh = traceHigh
        self.traceLow = traceLow
        self.spanID = spanID
        self.isSampled = isSampled
        self.tracestate = tracestate
        self.isRemote = isRemote
    }

    /// The parent a W3C `traceparent` (and its `tracestate`) names.
    init(remote parent: Traceparent, tracestate: String?) {
        self.init(
            traceHigh: parent.traceIDHigh, traceLow: parent.traceIDLow, spanID: parent.parentID, isSampled: parent.isSampled,
            tracestate: tracestate, isRemote: true)
    }

    /// The 32 lowercase hex digits of the trace id.
    public var traceID: String { HexText.traceID(high: traceHigh, low: traceLow) }

    /// The 16 lowercase hex digits of the span id.
    public var spanIDText: String { HexText.spanID(spanID) }

    /// The `traceparent` this span's children in other processes continue.
    public var traceparent: Traceparent { Traceparent(traceHigh: traceHigh, traceLow: traceLow, span: spanID, sampled: isSampled) }
}

private enum SpanIdentityKey: InstrumentationContextKey {
    typealias Value = SpanIdentity
    static var nameOverride: String? { "carbscan.span" }
}

/// The ids a root span takes: the ones the sampler drew on when it kept a new trace (`TraceSampling`), so that every
/// process that draws on that trace id again decides alike.
struct SampledRoot: Sendable {
    let traceHigh: UInt64
    let traceLow: UInt64
}

private enum SampledRootKey: InstrumentationContextKey {
    typealias Value = SampledRoot
    static var nameOverride: String? { "carbscan.sampled-root" }
}

extension InstrumentationContext {
    /// The current span's identity (this process's span, or the remote parent a request or a job carried).
    public var spanIdentity: SpanIdentity? {
        get { self[SpanIdentityKey.self] }
        set { self[SpanIdentityKey.self] = newValue }
    }

    var sampledRoot: SampledRoot? {
        get { self[SampledRootKey.self] }
        set { self[SampledRootKey.self] = newValue }
    }
}
