/// Protocol Buffers' binary wire format, as much of it as OTLP's trace messages use: varints, fixed 32- and 64-bit
/// numbers, length-delimited bytes, strings and nested messages (https://protobuf.dev/programming-guides/encoding/).
///
/// Written here instead of swift-protobuf's generated types, whose generic visitor (`traverse`) was 5% of the API's
/// CPU at 100% sampling (perf, 2026-11-28), and which needs its code generator. A nested message is written in place
/// and its length put before it once known, in the one byte kept for it when it is short.
package struct ProtobufWriter {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    private enum WireType: UInt64 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    private mutating func tag(_ field: UInt64, _ type: WireType) { varint(field << 3 | type.rawValue) }

    private mutating func varint(_ value: UInt64) {
        // Most are one byte: every tag here, and most lengths.
        if value < 0x80 { return bytes.append(UInt8(value)) }
        Self.withVarint(value) { bytes.append(contentsOf: $0) }
    }

    /// `value` as a varint, in a buffer on the stack: 7 bits a byte, low bits first, the high bit set on all but the last.
    static func withVarint<Result>(_ value: UInt64, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        var value = value
        var buffer: (UInt64, UInt64) = (0, 0)  // 16 bytes: a varint takes at most 10
        return withUnsafeMutableBytes(of: &buffer) { buffer in
            var count = 0
            while value >= 0x80 {
                buffer[count] = UInt8(truncatingIfNeeded: value) | 0x80
                value >>= 7
                count += 1
            }
            buffer[count] = UInt8(value)
            return body(UnsafeRawBufferPointer(rebasing: buffer[...count]))
        }
    }

    /// `int64`, `uint32`, `bool` and enum fields (a negative `int64` as its two's complement, 10 bytes).
    package mutating func varint(_ field: UInt64, _ value: UInt64) {
        tag(field, .varint)
        varint(value)
    }

    package mutating func fixed64(_ field: UInt64, _ value: UInt64) {
        tag(field, .fixed64)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func fixed32(_ field: UInt64, _ value: UInt32) {
        tag(field, .fixed32)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func double(_ field: UInt64, _ value: Double) { fixed64(field, value.bitPattern) }

    package mutating func string(_ field: UInt64, _ value: String) {
        // In place for a native string (all of them here); a copy made contiguous otherwise.
        if value.utf8.withContiguousStorageIfAvailable({ bytes(field, $0) }) != nil { return }
        var value = value
        value.withUTF8 { bytes(field, $0) }
    }

    package mutating func bytes(_ field: UInt64, _ value: UnsafeBufferPointer<UInt8>) {
        tag(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A span id: its 8 bytes, big-endian (the order its hex is written in).
    package mutating func id(_ field: UInt64, _ value: UInt64) {
        tag(field, .lengthDelimited)
        varint(8)
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// A trace id: its 16 bytes, big-endian. Not variadic: that was an array allocated for each id.
    package mutating func id(_ field: UInt64, _ high: UInt64, _ low: UInt64) {
        tag(field, .lengthDelimited)
        varint(16)
        withUnsafeBytes(of: high.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: low.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Bytes already encoded (a span's attributes, each a field with its tag), as they are.
    /// Bytes put together elsewhere (an attribute on the stack), as they are.
    mutating func append(raw: UnsafeRawBufferPointer) { bytes.append(contentsOf: raw) }

    package mutating func append(encoded: [UInt8]) { bytes.append(contentsOf: encoded) }

    package mutating func append(encoded: ArraySlice<UInt8>) { bytes.append(contentsOf: encoded) }

    /// Takes out what was written at `range` (an attribute set again).
    package mutating func remove(_ range: Range<Int>) { bytes.removeSubrange(range) }

    /// A message already written by a writer of its own (a resource, a scope: the same in every export).
    package mutating func message(_ field: UInt64, encoded: [UInt8]) {
        encoded.withUnsafeBufferPointer { bytes(field, $0) }
    }

    /// The tag and length of a length-delimited field (a message) whose `length` bytes are appended next: for a message
    /// whose length is known before it is written, where ``message(_:_:)`` would move it to make room for its length.
    package mutating func header(_ field: UInt64, length: Int) {
        tag(field, .lengthDelimited)
        varint(UInt64(length))
    }

    /// The bytes ``header(_:length:)`` writes.
    package static func headerSize(_ field: UInt64, length: Int) -> Int {
        varintSize(field << 3 | WireType.lengthDelimited.rawValue) + varintSize(UInt64(length))
    }

    private static func varintSize(_ value: UInt64) -> Int { max(1, (64 - value.leadingZeroBitCount + 6) / 7) }

    /// `value` as a length-delimited field of its own: its tag, its length and its bytes.
    package static func entry(_ field: UInt64, _ value: ArraySlice<UInt8>) -> [UInt8] {
        var writer = ProtobufWriter(capacity: value.count + 12)
        value.withUnsafeBufferPointer { writer.bytes(field, $0) }
        return writer.bytes
    }

    /// Hands over the bytes written so far in `other`, and goes on in the memory `other` held, which must be empty.
    package mutating func exchangeBytes(_ other: inout [UInt8]) {
        precondition(other.isEmpty, "a writer goes on only in empty bytes")
        swap(&bytes, &other)
    }

    /// A nested message, written by `body`.
    package mutating func message(_ field: UInt64, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, .lengthDelimited)
        // One byte kept for the length, enough for a message under 128 bytes (an attribute, its value): only a longer
        // one (a span, the request's outer messages) moves its bytes to make room for the rest.
        let lengthAt = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - lengthAt - 1
        if length < 0x80 {
            bytes[lengthAt] = UInt8(length)
            return
        }
        Self.withVarint(UInt64(length)) { varint in
            bytes[lengthAt] = varint[0]
            bytes.insert(contentsOf: varint[1...], at: lengthAt + 1)
        }
    }
}
