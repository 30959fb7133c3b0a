/// OTLP's `KeyValue` and `AnyValue` messages (opentelemetry-proto, `common/v1`): a span's, an event's, a link's and
/// the resource's attributes.
extension ProtobufWriter {
    /// A `KeyValue` message's fields for a typed value (``SpanFields``).
    package mutating func keyValue(_ key: String, _ value: SpanFields.Value) {
        string(1, key)
        message(2) { writer in
            switch value {
            case .string(let text): writer.string(1, text)
            case .bool(let flag): writer.varint(2, flag ? 1 : 0)
            case .int(let number): writer.varint(3, UInt64(bitPattern: number))
            case .double(let number): writer.double(4, number)
            case .other(let attribute): writer.anyValue(attribute)
            }
        }
    }

    /// A `KeyValue` message's fields.
    package mutating func keyValue(_ key: String, _ value: SpanAttribute) {
        string(1, key)
        message(2) { $0.anyValue(value) }
    }

    /// Each attribute as a `KeyValue` message in `field`.
    package mutating func keyValues(_ field: UInt64, _ attributes: SpanAttributes) {
        // swift-format-ignore: ReplaceForEachWithForLoop
        attributes.forEach { key, value in message(field) { $0.keyValue(key, value) } }  // SpanAttributes is no Sequence
    }

    /// An `AnyValue`'s one field; an array as an `ArrayValue` of them.
    private mutating func anyValue(_ value: SpanAttribute) {
        switch value {
        case .string(let text): string(1, text)
        case .bool(let flag): varint(2, flag ? 1 : 0)
        case .int32(let number): varint(3, UInt64(bitPattern: Int64(number)))
        case .int64(let number): varint(3, UInt64(bitPattern: number))
        case .double(let number): double(4, number)
        case .stringConvertible(let value): string(1, value.description)
        case .stringArray(let values): array { writer in for value in values { writer.message(1) { $0.string(1, value) } } }
        case .boolArray(let values): array { writer in for value in values { writer.message(1) { $0.varint(2, value ? 1 : 0) } } }
        case .int32Array(let values):
            array { writer in for value in values { writer.message(1) { $0.varint(3, UInt64(bitPattern: Int64(value))) } } }
        case .int64Array(let values):
            array { writer in for value in values { writer.message(1) { $0.varint(3, UInt64(bitPattern: value)) } } }
        case .doubleArray(let values): array { writer in for value in values { writer.message(1) { $0.double(4, value) } } }
        case .stringConvertibleArray(let values):
            array { writer in for value in values { writer.message(1) { $0.string(1, value.description) } } }
        default: break  // a case added later: an AnyValue with nothing set, as OTLP allows
        }
    }

    private mutating func array(_ values: (inout ProtobufWriter) -> Void) { message(5, values) }
}
