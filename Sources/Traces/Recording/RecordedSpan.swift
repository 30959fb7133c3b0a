import Synchronization

/// A span of a sampled trace, as it is being recorded: its name, attributes, events, links and status can change
/// until it ends, when it writes itself, as the exporter sends it, into the batch (``SpanBatch``). Ending it again does
/// nothing. OpenTelemetry's rules: an `ok` status is final, and its message, like an unset one's, is dropped.
public final class RecordedSpan: Span {
    struct State {
        var name: String
        var fields = SpanFields()
        var status: SpanStatus?
        var events: [SpanEvent] = []
        var links: [SpanLink] = []
        var ended = false
    }

    /// Its ids, as its children and the lines written under it carry them.
    public let identity: SpanIdentity
    /// The context it was started in, which its own ``context`` adds its identity to.
    let baseContext: InstrumentationContext
    let kind: SpanKind
    let parentID: UInt64
    let parentIsRemote: Bool
    let start: UInt64
    private let batch: SpanBatch
    private let state: Mutex<State>

    init(
        name: String, kind: SpanKind, identity: SpanIdentity, base: InstrumentationContext, parentID: UInt64, parentIsRemote: Bool,
        start: UInt64, batch: SpanBatch
    ) {
        self.identity = identity
        baseContext = base
        self.kind = kind
        self.parentID = parentID
        self.parentIsRemote = parentIsRemote
        self.start = start
        self.batch = batch
        state = Mutex(State(name: name))
    }

    /// Its context, made when asked for (by a caller of the `Tracing` API): while it runs, ``CurrentTrace`` holds
    /// the span itself.
    public var context: InstrumentationContext {
        var context = baseContext
        context.spanIdentity = identity
        return context
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
        state.withLock { state in
            guard !state.ended else { return }
            state.ended = true
            let end = instant().nanosecondsSinceEpoch
            // Written from its state in place, under its lock (then the batch's, never the other way round).
            batch.append { write(state, end: end, into: &$0) }
        }
    }
}
