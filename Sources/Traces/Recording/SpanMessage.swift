/// A span as OTLP sends it, a `Span` message (opentelemetry-proto, `trace/v1`), written once, as the span ends, into
/// the batch the exporter sends whole. The field numbers are the `.proto` file's; the suite's receiver decodes what is
/// written here with the OpenTelemetry project's own generated Python types (`otlp_receiver.py`).
extension RecordedSpan {
    /// Its `Span` message's fields, from its state as it ends (`end`: nanoseconds since the Unix epoch).
    func write(_ state: State, end: UInt64, into writer: inout ProtobufWriter) {
        writer.id(1, identity.traceHigh, identity.traceLow)
        writer.id(2, identity.spanID)
        if let tracestate = identity.tracestate, !tracestate.isEmpty { writer.string(3, tracestate) }
        if parentID != 0 { writer.id(4, parentID) }
        writer.string(5, state.name)
        writer.varint(6, SpanMessage.kind(kind))
        writer.fixed64(7, start)
        writer.fixed64(8, end)
        writer.append(encoded: state.fields.encoded)  // field 9, each attribute written as it was set
        for event in state.events {
            writer.message(11) { writer in
                writer.fixed64(1, event.nanosecondsSinceEpoch)
                writer.string(2, event.name)
                writer.keyValues(3, event.attributes)
            }
        }
        for link in state.links {
            guard let target = link.context.spanIdentity else { continue }
            writer.message(13) { writer in
                writer.id(1, target.traceHigh, target.traceLow)
                writer.id(2, target.spanID)
                if let tracestate = target.tracestate, !tracestate.isEmpty { writer.string(3, tracestate) }
                writer.keyValues(4, link.attributes)
                writer.fixed32(6, SpanMessage.flags(sampled: target.isSampled, remote: target.isRemote))
            }
        }
        if let status = state.status {
            writer.message(15) { writer in
                if let text = status.message, status.code == .error, !text.isEmpty { writer.string(2, text) }
                writer.varint(3, status.code == .ok ? 1 : 2)
            }
        }
        // The W3C flags, and whether the parent was remote (a request's or a job's context).
        writer.fixed32(16, SpanMessage.flags(sampled: identity.isSampled, remote: parentID != 0 && parentIsRemote))
    }
}

/// What a `Span` message's numbers mean.
enum SpanMessage {
    /// `SpanFlags`: the W3C trace flags in the low byte, then HAS_IS_REMOTE (0x100) and IS_REMOTE (0x200).
    static func flags(sampled: Bool, remote: Bool) -> UInt32 {
        (sampled ? 1 : 0) | 0x100 | (remote ? 0x200 : 0)
    }

    /// Every kind, for a number read back (``kind(_:)`` says which is which).
    static let kinds: [SpanKind] = [.internal, .server, .client, .producer, .consumer]

    /// `Span.SpanKind`'s number (0 is unspecified).
    static func kind(_ kind: SpanKind) -> UInt64 {
        switch kind {
        case .internal: 1
        case .server: 2
        case .client: 3
        case .producer: 4
        case .consumer: 5
        }
    }
}
