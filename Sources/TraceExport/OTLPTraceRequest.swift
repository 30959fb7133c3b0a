import Traces

/// An OTLP `ExportTraceServiceRequest` in binary protobuf (opentelemetry-proto, `collector/trace/v1`): one
/// `ResourceSpans` for this process's resource, one `ScopeSpans` for its instrumentation scope, and the spans as the
/// batch holds them, already written (``EncodedSpans``). The field numbers are the `.proto` files'; the suite's
/// receiver decodes what is written here with the OpenTelemetry project's own generated Python types
/// (`otlp_receiver.py`).
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

    func encode(_ spans: EncodedSpans) -> [UInt8] {
        // The outer messages' lengths are known before they are written: the spans are not moved to make room for them.
        let scopeSpans = ProtobufWriter.headerSize(1, length: scope.count) + scope.count + spans.bytes.count
        let resourceSpans =
            ProtobufWriter.headerSize(1, length: resource.count) + resource.count + ProtobufWriter.headerSize(2, length: scopeSpans)
            + scopeSpans
        var writer = ProtobufWriter(capacity: ProtobufWriter.headerSize(1, length: resourceSpans) + resourceSpans)
        writer.header(1, length: resourceSpans)  // ExportTraceServiceRequest.resource_spans
        writer.message(1, encoded: resource)  // ResourceSpans.resource
        writer.header(2, length: scopeSpans)  // ResourceSpans.scope_spans
        writer.message(1, encoded: scope)  // ScopeSpans.scope
        writer.append(encoded: spans.bytes)  // ScopeSpans.spans, each as it was written when it ended
        return writer.bytes
    }
}
