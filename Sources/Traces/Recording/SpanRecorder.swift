/// The process's tracer: records the spans of sampled traces into a ``SpanBatch``, which the executable's OTLP
/// exporter sends on. Bootstrapped once (`InstrumentationSystem.bootstrap`) by the command that traces.
///
/// Written instead of swift-otel's tracer, because of what that one costs a recorded span (`ops/bench/tracing.sh`,
/// 2026-11-28: ~100 µs of the API's CPU per span, 17 µs of a worker's): each span's start and end is an event on an
/// `AsyncStream` whose consumer task is woken, ids come from a locked generator that calls `getrandom`, the tracer is
/// an unspecialized generic, and swift-protobuf encodes through its generic visitor. Here a span ends by appending
/// itself to a batch under a lock, ids come from a counter (`RandomIDs`), and the exporter writes protobuf directly.
///
/// The sampling decision is taken before a span is asked for (`TraceSwitch.decide`): a span is recorded when its
/// parent is sampled or it starts a trace the sampler kept; under a parent that is not, it is a span that records
/// nothing and carries its parent's context.
public struct SpanRecorder: Tracer {
    public let batch: SpanBatch

    public init(batch: SpanBatch) {
        self.batch = batch
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String,
        context: @autoclosure () -> InstrumentationContext,
        ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant,
        function: String,
        file fileID: String,
        line: UInt
    ) -> RecorderSpan {
        let parent = context()
        let ids = RandomIDs.next()
        let identity: SpanIdentity
        var parentID: UInt64 = 0
        var parentIsRemote = false
        if let span = parent.spanIdentity {
            guard span.isSampled else { return .unrecorded(parent) }
            identity = SpanIdentity(
                traceHigh: span.traceHigh, traceLow: span.traceLow, spanID: ids.span, isSampled: true, tracestate: span.tracestate,
                isRemote: false)
            parentID = span.spanID
            parentIsRemote = span.isRemote
        } else if let root = parent.sampledRoot {
            identity = SpanIdentity(
                traceHigh: root.traceHigh, traceLow: root.traceLow, spanID: ids.span, isSampled: true, tracestate: nil, isRemote: false)
        } else {
            identity = SpanIdentity(
                traceHigh: ids.traceHigh, traceLow: ids.traceLow, spanID: ids.span, isSampled: true, tracestate: nil, isRemote: false)
        }
        var spanContext = parent
        if parent.sampledRoot != nil { spanContext.sampledRoot = nil }
        spanContext.spanIdentity = identity
        return .recorded(
            RecordedSpan(
                name: operationName, kind: kind, context: spanContext, parentID: parentID, parentIsRemote: parentIsRemote,
                start: instant().nanosecondsSinceEpoch, batch: batch))
    }

    /// Wakes the exporter to send what has ended.
    public func forceFlush() { batch.wake() }

    /// W3C Trace Context, for callers of the `Instrument` API (the code here uses `TraceCarrier`).
    public func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        for (name, value) in TraceCarrier.propagated(context) { injector.inject(value, forKey: name, into: &carrier) }
    }

    public func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract
    )
    where Extract.Carrier == Carrier {
        let parent = TraceCarrier.remoteParent(
            traceparent: extractor.extract(key: "traceparent", from: carrier),
            tracestate: extractor.extract(key: "tracestate", from: carrier))
        if let parent { context.spanIdentity = parent }
    }
}

/// A span ``SpanRecorder`` started: recorded, or, under a parent that is not sampled, one that records nothing and
/// whose context is its parent's.
public enum RecorderSpan: Span {
    case recorded(RecordedSpan)
    case unrecorded(InstrumentationContext)

    public var context: InstrumentationContext {
        switch self {
        case .recorded(let span): span.context
        case .unrecorded(let context): context
        }
    }

    public var isRecording: Bool {
        guard case .recorded(let span) = self else { return false }
        return span.isRecording
    }

    public var operationName: String {
        get {
            guard case .recorded(let span) = self else { return "" }
            return span.operationName
        }
        nonmutating set { if case .recorded(let span) = self { span.operationName = newValue } }
    }

    public var attributes: SpanAttributes {
        get {
            guard case .recorded(let span) = self else { return [:] }
            return span.attributes
        }
        nonmutating set { if case .recorded(let span) = self { span.attributes = newValue } }
    }

    public func setStatus(_ status: SpanStatus) {
        if case .recorded(let span) = self { span.setStatus(status) }
    }

    public func addEvent(_ event: SpanEvent) {
        if case .recorded(let span) = self { span.addEvent(event) }
    }

    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant)
    {
        if case .recorded(let span) = self { span.recordError(error, attributes: attributes, at: instant()) }
    }

    public func addLink(_ link: SpanLink) {
        if case .recorded(let span) = self { span.addLink(link) }
    }

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        if case .recorded(let span) = self { span.end(at: instant()) }
    }
}
