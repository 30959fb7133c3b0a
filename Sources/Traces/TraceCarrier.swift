/// A trace context as text, to travel where no HTTP headers go: in a job's record, from the producer's span to every
/// attempt's span in a worker. It is what W3C Trace Context sends (`traceparent`, and `tracestate` when the trace
/// has one), one `name=value` per line; nothing with `OTEL_PROPAGATORS=none`.
public enum TraceCarrier {
    /// The current span's context, or nil when tracing is off or no span is current.
    public static func current() -> String? {
        // Off, or on with `OTEL_PROPAGATORS=none`: nothing travels, a dropped trace's context neither.
        guard TraceSwitch.isPropagating else { return nil }
        if let dropped = CurrentTrace.dropped { return dropped.carried }
        guard let span = CurrentTrace.spanIdentity else { return nil }
        return span.traceparent.carried(tracestate: span.tracestate)
    }

    /// What W3C Trace Context sends for the span `span` identifies, by name (`traceparent`, `tracestate`): a job's
    /// record's text, an outbound request's headers. Without a span, in a trace the sampler dropped, that trace's.
    public static func propagated(_ span: SpanIdentity?) -> [String: String] {
        // `OTEL_PROPAGATORS=none`: nothing is sent, a dropped trace's context neither.
        guard !TraceSwitch.withholdsContext else { return [:] }
        guard let span else { return CurrentTrace.dropped?.fields ?? [:] }
        guard TraceSwitch.isPropagating else { return [:] }
        return span.traceparent.fields(tracestate: span.tracestate)
    }

    /// Whether the running task is in a trace: a span's context is current, or a trace the sampler dropped.
    public static var inTrace: Bool { CurrentTrace.current != nil || InstrumentationContext.current != nil }

    /// The propagation headers for the running task's trace: its span's, or a dropped trace's.
    public static var currentFields: [String: String] { propagated(CurrentTrace.spanIdentity) }

    /// The context that `text` carries (a context with nothing in it for nil or text that holds no valid
    /// `traceparent`).
    public static func context(from text: String?) -> InstrumentationContext {
        let fields = text.map { traceFields(of: $0[...]) }
        var context = InstrumentationContext.topLevel
        context.spanIdentity = remoteParent(
            traceparent: fields?.traceparent.map(String.init), tracestate: fields?.tracestate.map(String.init))
        return context
    }

    /// The remote parent a valid `traceparent` (and its `tracestate`) names; nil for none, or while contexts do not
    /// travel (`OTEL_PROPAGATORS=none`).
    static func remoteParent(traceparent: String?, tracestate: String?) -> SpanIdentity? {
        guard TraceSwitch.isPropagating, let parent = traceparent.flatMap(Traceparent.init) else { return nil }
        return SpanIdentity(remote: parent, tracestate: tracestate)
    }

    /// The trace id (32 hex digits) of a carried W3C `traceparent`, for operators (the dashboard's job page).
    public static func traceID(of text: String?) -> String? {
        guard let traceparent = text.flatMap({ traceFields(of: $0[...]).traceparent }) else { return nil }
        let parts = traceparent.split(separator: "-")
        guard parts.count == 4, parts[1].count == 32, parts[1].allSatisfy(\.isHexDigit) else { return nil }
        return String(parts[1])
    }

    /// A carried text's `traceparent` and `tracestate` (`name=value` lines; the last of a name counts), read in place:
    /// a worker decides each job's trace on them, where a dictionary of new strings cost every job.
    public static func traceFields(of text: Substring) -> (traceparent: Substring?, tracestate: Substring?) {
        var fields: (traceparent: Substring?, tracestate: Substring?) = (nil, nil)
        // Line by line in the UTF-8 bytes, without `split`, whose array of lines was allocated for every job, and
        // without looking for characters (each a grapheme break).
        var rest = text
        while !rest.isEmpty {
            let end = rest.utf8.firstIndex(of: UInt8(ascii: "\n")) ?? rest.endIndex
            let line = rest[..<end]
            rest = end == rest.endIndex ? rest[end...] : rest[rest.utf8.index(after: end)...]
            guard let equals = line.utf8.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let value = line[line.utf8.index(after: equals)...]
            switch line[..<equals] {
            case "traceparent": fields.traceparent = value
            case "tracestate": fields.tracestate = value
            default: continue
            }
        }
        return fields
    }

}
