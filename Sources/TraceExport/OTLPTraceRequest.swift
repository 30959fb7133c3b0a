import Traces

/// An OTLP `ExportTraceServiceRequest` in binary protobuf (opentelemetry-proto, `collector/trace/v1`): one
/// `ResourceSpans` for this process's resource, one `ScopeSpans` for its instrumentation scope, and the spans.
/// The field numbers are the `.proto` files'; the suite's receiver decodes what is written here with the
/// OpenTelemetry project's own generated Python types (`otlp_receiver.py`).
struct OTLPTraceRequest {
    /// The resource (`service.name`, `OTEL_RESOURCE_ATTRIBUTES`…) and the scope, written once.
    private let resource: [UInt8]
    private let scope: [UInt8]

    init(resource: [(key: String, value: String)], scope: (name: String, version: String)) {
        var writer = ProtobufWriter()
        for attribute in resource { writer.message(1) { $0.keyValue(attribute.key, SpanFields.Value.string(attribute.value)) } }
        self.resource = writer.bytes
        writer = ProtobufWriter()
        writer.string(1, scope.name)
        writer.string(2, scope.version)
        self.scope = writer.bytes
    }

    func encode(_ spans: [FinishedSpan]) -> [UInt8] {
        var writer = ProtobufWriter(capacity: 64 + spans.count * 512)
        writer.message(1) { resourceSpans in  // ExportTraceServiceRequest.resource_spans
            resourceSpans.message(1, encoded: resource)  // ResourceSpans.resource
            resourceSpans.message(2) { scopeSpans in  // ResourceSpans.scope_spans
                scopeSpans.message(1, encoded: scope)  // ScopeSpans.scope
                for span in spans { scopeSpans.message(2) { $0.span(span) } }  // ScopeSpans.spans
            }
        }
        return writer.bytes
    }
}

extension ProtobufWriter {
    /// A `Span` message's fields.
    fileprivate mutating func span(_ span: FinishedSpan) {
        let identity = span.identity
        id(1, identity.traceHigh, identity.traceLow)
        id(2, identity.spanID)
        if let tracestate = identity.tracestate, !tracestate.isEmpty { string(3, tracestate) }
        if span.parentID != 0 { id(4, span.parentID) }
        string(5, span.name)
        varint(6, Self.kind(span.kind))
        fixed64(7, span.start)
        fixed64(8, span.end)
        append(encoded: span.fields.encoded)  // field 9, each attribute written as it was set
        for event in span.events {
            message(11) { writer in
                writer.fixed64(1, event.nanosecondsSinceEpoch)
                writer.string(2, event.name)
                writer.keyValues(3, event.attributes)
            }
        }
        for link in span.links {
            guard let target = link.context.spanIdentity else { continue }
            message(13) { writer in
                writer.id(1, target.traceHigh, target.traceLow)
                writer.id(2, target.spanID)
                if let tracestate = target.tracestate, !tracestate.isEmpty { writer.string(3, tracestate) }
                writer.keyValues(4, link.attributes)
                writer.fixed32(6, Self.flags(sampled: target.isSampled, remote: target.isRemote))
            }
        }
        if let status = span.status {
            message(15) { writer in
                if let text = status.message, status.code == .error, !text.isEmpty { writer.string(2, text) }
                writer.varint(3, status.code == .ok ? 1 : 2)
            }
        }
        // The W3C flags, and whether the parent was remote (a request's or a job's context).
        fixed32(16, Self.flags(sampled: identity.isSampled, remote: span.parentID != 0 && span.parentIsRemote))
    }

    /// `SpanFlags`: the W3C trace flags in the low byte, then HAS_IS_REMOTE (0x100) and IS_REMOTE (0x200).
    private static func flags(sampled: Bool, remote: Bool) -> UInt32 {
        (sampled ? 1 : 0) | 0x100 | (remote ? 0x200 : 0)
    }

    private static func kind(_ kind: SpanKind) -> UInt64 {
        switch kind {
        case .internal: 1
        case .server: 2
        case .client: 3
        case .producer: 4
        case .consumer: 5
        }
    }
}
