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
        if let span = parent.spanIdentity {
            guard span.isSampled else { return .unrecorded(parent) }
            return record(operationName, kind: kind, under: span, in: parent, at: instant().nanosecondsSinceEpoch)
        }
        if let root = parent.sampledRoot {
            var base = parent
            base.sampledRoot = nil
            return record(operationName, kind: kind, root: root, in: base, at: instant().nanosecondsSinceEpoch)
        }
        // A caller of the `Tracing` API passes `InstrumentationContext.current`, which a span of this process, bound as
        // `CurrentTrace`, does not set: its span is that one's child.
        if case .span(let current)? = CurrentTrace.current {
            return record(operationName, kind: kind, under: current.identity, in: parent, at: instant().nanosecondsSinceEpoch)
        }
        return record(operationName, kind: kind, root: Self.newRoot(), in: parent, at: instant().nanosecondsSinceEpoch)
    }

    /// The first span of a sampled trace in this process, under the parent the sampler decided on; its context holds
    /// only its identity.
    public func startSpan(_ operationName: String, parent: SampledParent, ofKind kind: SpanKind, at start: UInt64) -> RecorderSpan {
        if let remote = parent.remote { return record(operationName, kind: kind, under: remote, in: .topLevel, at: start) }
        return record(operationName, kind: kind, root: parent.root ?? Self.newRoot(), in: .topLevel, at: start)
    }

    /// A span under `parent`, a span of this process that records (``CurrentTrace``'s), in the context it started in.
    public func startSpan(_ operationName: String, under parent: RecordedSpan, ofKind kind: SpanKind, at start: UInt64) -> RecorderSpan {
        record(operationName, kind: kind, under: parent.identity, in: parent.baseContext, at: start)
    }

    private static func newRoot() -> SampledRoot {
        let ids = RandomIDs.next()
        return SampledRoot(traceHigh: ids.traceHigh, traceLow: ids.traceLow)
    }

    /// A span under `parent` (sampled), in `base` (the context its own identity is added to).
    private func record(_ name: String, kind: SpanKind, under parent: SpanIdentity, in base: InstrumentationContext, at start: UInt64)
        -> RecorderSpan
    {
        let identity = SpanIdentity(
            traceHigh: parent.traceHigh, traceLow: parent.traceLow, spanID: RandomIDs.next().span, isSampled: true,
            tracestate: parent.tracestate, isRemote: false)
        return record(name, kind: kind, identity: identity, parentID: parent.spanID, parentIsRemote: parent.isRemote, in: base, at: start)
    }

    /// The root span of a trace on `root`'s ids.
    private func record(_ name: String, kind: SpanKind, root: SampledRoot, in base: InstrumentationContext, at start: UInt64)
        -> RecorderSpan
    {
        let identity = SpanIdentity(
            traceHigh: root.traceHigh, traceLow: root.traceLow, spanID: RandomIDs.next().span, isSampled: true, tracestate: nil,
            isRemote: false)
        return record(name, kind: kind, identity: identity, parentID: 0, parentIsRemote: false, in: base, at: start)
    }

    private func record(
        _ name: String, kind: SpanKind, identity: SpanIdentity, parentID: UInt64, parentIsRemote: Bool, in base: InstrumentationContext,
        at start: UInt64
    ) -> RecorderSpan {
        .recorded(
            RecordedSpan(
                name: name, kind: kind, identity: identity, base: base, parentID: parentID, parentIsRemote: parentIsRemote, start: start,
                batch: batch))
    }

    /// Wakes the exporter to send what has ended.
    public func forceFlush() { batch.wake() }

    /// W3C Trace Context, for callers of the `Instrument` API (the code here uses `TraceCarrier`).
    public func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        for (name, value) in TraceCarrier.propagated(context.spanIdentity) { injector.inject(value, forKey: name, into: &carrier) }
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

    /// Its identity: a recorded span's own, an unrecorded one's parent's (nil for a context without one).
    public var identity: SpanIdentity? {
        switch self {
        case .recorded(let span): span.identity
        case .unrecorded(let context): context.spanIdentity
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

    /// Sets each of `fields` on a recorded span (``RecordedSpan/set(_:)``).
    public func set(_ fields: @autoclosure () -> SpanFields) {
        if case .recorded(let span) = self { span.set(fields()) }
    }

    /// Sets one attribute on a recorded span.
    public func set(_ key: String, _ value: @autoclosure () -> SpanFields.Value) {
        if case .recorded(let span) = self { span.set(key, value()) }
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
