/// A trace context as text, to travel where no HTTP headers go: in a job's record, from the producer's span to every
/// attempt's span in a worker. It is what the configured propagators inject (W3C `traceparent` and `tracestate` by
/// default; `OTEL_PROPAGATORS` may name others), one `name=value` per line.
public enum TraceCarrier {
    /// The current span's context, or nil when tracing is off or no span is current.
    public static func current() -> String? {
        guard TraceSwitch.isOn, let context = InstrumentationContext.current else { return nil }
        if let dropped = context.droppedTrace { return dropped.carried }
        let fields = propagated(context)
        if fields.isEmpty { return nil }
        return fields.keys.sorted().map { "\($0)=\(fields[$0]!)" }.joined(separator: "\n")
    }

    /// What the configured propagators send for `context`, by name (`traceparent`, `tracestate`): a job's record's
    /// text, an outbound request's headers.
    public static func propagated(_ context: InstrumentationContext) -> [String: String] {
        if let dropped = context.droppedTrace { return dropped.fields }
        var fields: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &fields, using: FieldsInjector())
        return fields
    }

    /// The context that `text` carries (a context with nothing in it for nil or text no propagator reads).
    public static func context(from text: String?) -> InstrumentationContext {
        context(of: text.map(fields(of:)))
    }

    /// The context that `fields` (a carried text's, ``fields(of:)``) hold.
    package static func context(of fields: [String: String]?) -> InstrumentationContext {
        var context = InstrumentationContext.topLevel
        guard let fields else { return context }
        InstrumentationSystem.instrument.extract(fields, into: &context, using: FieldsExtractor())
        return context
    }

    /// The trace id (32 hex digits) of a carried W3C `traceparent`, for operators (the dashboard's job page).
    public static func traceID(of text: String?) -> String? {
        guard let traceparent = text.flatMap({ fields(of: $0)["traceparent"] }) else { return nil }
        let parts = traceparent.split(separator: "-")
        guard parts.count == 4, parts[1].count == 32, parts[1].allSatisfy(\.isHexDigit) else { return nil }
        return String(parts[1])
    }

    package static func fields(of text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return fields
    }
}

/// Header-like fields by name, for any propagator.
public struct FieldsInjector: Injector {
    public init() {}
    public func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}

public struct FieldsExtractor: Extractor {
    public init() {}
    public func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
