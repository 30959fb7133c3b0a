import Synchronization

/// A span of a sampled trace, as it is being recorded: its name, attributes, events, links and status can change
/// until it ends, when it appends itself, as a ``FinishedSpan``, to the batch the exporter sends. Ending it again does
/// nothing. OpenTelemetry's rules: an `ok` status is final, and its message, like an unset one's, is dropped.
public final class RecordedSpan: Span {
    private struct State {
        var name: String
        var fields = SpanFields()
        var status: SpanStatus?
        var events: [SpanEvent] = []
        var links: [SpanLink] = []
        var ended = false
    }

    public let context: InstrumentationContext
    private let kind: SpanKind
    private let parentID: UInt64
    private let parentIsRemote: Bool
    private let start: UInt64
    private let batch: SpanBatch
    private let state: Mutex<State>

    init(
        name: String, kind: SpanKind, context: InstrumentationContext, parentID: UInt64, parentIsRemote: Bool, start: UInt64,
        batch: SpanBatch
    ) {
        self.context = context
        self.kind = kind
        self.parentID = parentID
        self.parentIsRemote = parentIsRemote
        self.start = start
        self.batch = batch
        state = Mutex(State(name: name))
    }

    public var isRecording: Bool { state.withLock { !$0.ended } }

    public var operationName: String {
        get { state.withLock { $0.name } }
        set { state.withLock { if !$0.ended { $0.name = newValue } } }
    }

    /// Its attributes as `SpanAttributes`, converted both ways: ``set(_:)`` is the cheaper way to set them.
    public var attributes: SpanAttributes {
        get { state.withLock { $0.fields.attributes } }
        set { state.withLock { if !$0.ended { $0.fields = SpanFields(newValue) } } }
    }

    /// Sets each of `fields`, in their order (replacing a key's value if it is set).
    public func set(_ fields: SpanFields) {
        state.withLock { if !$0.ended { $0.fields.set(fields) } }
    }

    /// Sets one attribute.
    public func set(_ key: String, _ value: SpanFields.Value) {
        state.withLock { if !$0.ended { $0.fields.set(key, value) } }
    }

    public func setStatus(_ status: SpanStatus) {
        state.withLock {
            guard !$0.ended, $0.status?.code != .ok else { return }
            $0.status = status.code == .ok ? SpanStatus(code: .ok) : status
        }
    }

    public func addEvent(_ event: SpanEvent) {
        state.withLock { if !$0.ended { $0.events.append(event) } }
    }

    /// An `exception` event, as OpenTelemetry's conventions name it.
    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant)
    {
        var described: SpanAttributes = [
            "exception.type": .string(String(describing: type(of: error))),
            "exception.message": .string(String(describing: error)),
        ]
        described.merge(attributes)
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: described))
    }

    public func addLink(_ link: SpanLink) {
        state.withLock { if !$0.ended { $0.links.append(link) } }
    }

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let finished: FinishedSpan? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            return FinishedSpan(
                identity: context.spanIdentity!, parentID: parentID, parentIsRemote: parentIsRemote, name: state.name, kind: kind,
                start: start, end: instant().nanosecondsSinceEpoch, fields: state.fields, status: state.status,
                events: state.events, links: state.links)
        }
        if let finished { batch.append(finished) }
    }
}

/// A span that has ended, as the exporter sends it. A class: it is made once, as the span ends, and only handed on
/// after that (to the batch, to the exporter), where each copy of a struct of its dozen parts retained each of them
/// (perf, 2026-11-29: 1.8% of a no-op worker's CPU at 100% sampling).
public final class FinishedSpan: Sendable {
    public let identity: SpanIdentity
    /// The parent's span id, 0 for a root span.
    public let parentID: UInt64
    public let parentIsRemote: Bool
    public let name: String
    public let kind: SpanKind
    /// Nanoseconds since the Unix epoch.
    public let start: UInt64
    public let end: UInt64
    public let fields: SpanFields
    public let status: SpanStatus?
    public let events: [SpanEvent]
    public let links: [SpanLink]

    public init(
        identity: SpanIdentity, parentID: UInt64, parentIsRemote: Bool, name: String, kind: SpanKind, start: UInt64, end: UInt64,
        fields: SpanFields, status: SpanStatus?, events: [SpanEvent], links: [SpanLink]
    ) {
        self.identity = identity
        self.parentID = parentID
        self.parentIsRemote = parentIsRemote
        self.name = name
        self.kind = kind
        self.start = start
        self.end = end
        self.fields = fields
        self.status = status
        self.events = events
        self.links = links
    }
}
