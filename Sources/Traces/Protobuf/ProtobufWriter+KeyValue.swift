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

    /// A `KeyValue` message in `field` (under 16) whose lengths all fit a byte (a string, an integer or a flag, key and
    /// value under 120 bytes together): put together on the stack and appended at once. False, and nothing written,
    /// for any other. Written with ``message(_:_:)``, the appends of its eight parts, their length kept and patched,
    /// were 0.6 µs of a worker's consumer span's 6 attributes (perf, 2026-12-07).
    package mutating func shortKeyValue(_ field: UInt64, _ key: String, _ value: SpanFields.Value) -> Bool {
        guard field < 16 else { return false }
        return key.utf8.withContiguousStorageIfAvailable { key -> Bool in
            switch value {
            case .string(let text):
                return text.utf8.withContiguousStorageIfAvailable { text in
                    shortKeyValue(field, key, valueLength: 2 + text.count) { value in
                        value[0] = 0x0a  // AnyValue.string_value
                        value[1] = UInt8(text.count)
                        UnsafeMutableRawBufferPointer(rebasing: value[2...]).copyMemory(from: UnsafeRawBufferPointer(text))
                    }
                } ?? false
            case .int(let number):
                return Self.withVarint(UInt64(bitPattern: number)) { varint in
                    shortKeyValue(field, key, valueLength: 1 + varint.count) { value in
                        value[0] = 0x18  // AnyValue.int_value
                        UnsafeMutableRawBufferPointer(rebasing: value[1...]).copyMemory(from: varint)
                    }
                }
            case .bool(let flag):
                return shortKeyValue(field, key, valueLength: 2) { value in
                    value[0] = 0x10  // AnyValue.bool_value
                    value[1] = flag ? 1 : 0
                }
            case .double, .other: return false
            }
        } ?? false
    }

    /// The `KeyValue` of `key` and an `AnyValue` of `valueLength` bytes, which `value` writes.
    private mutating func shortKeyValue(
        _ field: UInt64, _ key: UnsafeBufferPointer<UInt8>, valueLength: Int, _ value: (UnsafeMutableRawBufferPointer) -> Void
    ) -> Bool {
        let length = 2 + key.count + 2 + valueLength
        guard length < 0x80 else { return false }
        withUnsafeTemporaryAllocation(byteCount: 2 + length, alignment: 1) { entry in
            entry[0] = UInt8(field << 3 | 2)
            entry[1] = UInt8(length)
            entry[2] = 0x0a  // KeyValue.key
            entry[3] = UInt8(key.count)
            UnsafeMutableRawBufferPointer(rebasing: entry[4...]).copyMemory(from: UnsafeRawBufferPointer(key))
            entry[4 + key.count] = 0x12  // KeyValue.value
            entry[5 + key.count] = UInt8(valueLength)
            value(UnsafeMutableRawBufferPointer(rebasing: entry[(6 + key.count)...]))
            append(raw: UnsafeRawBufferPointer(entry))
        }
        return true
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
