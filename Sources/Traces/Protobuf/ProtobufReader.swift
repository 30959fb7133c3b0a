/// The fields of a binary protobuf message: for the little a collector answers (an `ExportTraceServiceResponse`'s
/// partial success, a failure's `google.rpc.Status` message), and a recorded span's attributes read back
/// (`SpanFields`). Nil for bytes that are no message.
package enum ProtobufReader {
    package enum Value {
        case number(UInt64)
        case bytes(ArraySlice<UInt8>)

        package var text: String? {
            guard case .bytes(let bytes) = self else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    package static func fields(of bytes: ArraySlice<UInt8>) -> [(field: UInt64, value: Value)]? {
        var fields: [(UInt64, Value)] = []
        var rest = bytes
        while !rest.isEmpty {
            guard let field = first(of: rest) else { return nil }
            fields.append((field.field, field.value))
            rest = bytes[field.end...]
        }
        return fields
    }

    /// The first field of `bytes`, and the index it ends at; nil for bytes that do not begin with one.
    package static func first(of bytes: ArraySlice<UInt8>) -> (field: UInt64, value: Value, end: Int)? {
        var index = bytes.startIndex
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.endIndex, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
        guard let key = varint() else { return nil }
        switch key & 7 {
        case 0:
            guard let value = varint() else { return nil }
            return (key >> 3, .number(value), index)
        case 1, 5:
            let size = key & 7 == 1 ? 8 : 4
            guard bytes.endIndex - index >= size else { return nil }
            var value: UInt64 = 0
            for offset in (0..<size).reversed() { value = value << 8 | UInt64(bytes[index + offset]) }
            return (key >> 3, .number(value), index + size)
        case 2:
            guard let length = varint(), length <= UInt64(bytes.endIndex - index) else { return nil }
            return (key >> 3, .bytes(bytes[index..<index + Int(length)]), index + Int(length))
        default: return nil
        }
    }
}
