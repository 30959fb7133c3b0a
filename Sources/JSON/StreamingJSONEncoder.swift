import Foundation

/// Encodes an `Encodable` value straight into UTF-8 bytes, keys in the order the type encodes them (declaration
/// order for synthesized conformances), dates as `writeDate` writes them (the API: the seed's timestamps).
///
/// Foundation's `JSONEncoder` first builds a tree of boxed values and dictionaries and then writes it; on a page
/// of meals that was a quarter of the API's CPU (ops/bench/api.sh). This encoder writes as the value encodes
/// itself, so it needs containers to be used in order: a nested container is closed when its parent writes its
/// next element or ends, which is how synthesized `encode(to:)` and every hand-written one in this API use them.
/// Output matches `JSONEncoder` with `.withoutEscapingSlashes` (not `.sortedKeys`): integral doubles without
/// `.0`, non-finite numbers refused.
public struct StreamingJSONEncoder: Sendable {
    /// Appends a date's text (the encoder writes the quotes around it).
    public let writeDate: @Sendable (Date, inout [UInt8]) -> Void

    public init(writeDate: @escaping @Sendable (Date, inout [UInt8]) -> Void) {
        self.writeDate = writeDate
    }

    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        try encode(value, after: [])
    }

    /// `prefix`, then `value` encoded: a frame written by hand around the value (the API's envelope) shares one
    /// buffer with it.
    public func encode<T: Encodable>(_ value: T, after prefix: [UInt8]) throws -> [UInt8] {
        let output = JSONOutput(writeDate: writeDate, prefix: prefix)
        try output.write(value, parent: nil, key: nil)
        return output.bytes
    }
}

/// The bytes written so far, shared by every container of one encoding.
///
/// Its mutable state, and a ``JSONSlot``'s, is marked `@exclusivity(unchecked)`: a class's stored property is
/// otherwise checked at run time on every access, a thread-local lookup on each `append`, and writing a page of 20
/// meals made about 600 such accesses, 4% of `GET /meals`'s CPU (perf, 2026-11-28). One encoding runs on one thread,
/// start to end, and no access overlaps another: the one long access, `writeDate`'s `inout`, runs a closure that
/// only appends a date.
final class JSONOutput {
    @exclusivity(unchecked) var bytes: [UInt8] = []
    let writeDate: (Date, inout [UInt8]) -> Void

    init(writeDate: @escaping (Date, inout [UInt8]) -> Void, prefix: [UInt8]) {
        self.writeDate = writeDate
        bytes = prefix
        bytes.reserveCapacity(4096)
    }

    /// Writes one complete value (the element `key` of `parent`): the fast paths for scalars (the type checks are
    /// cheap, a dynamic cast is not), else the value's own `encode(to:)` into a fresh slot.
    func write<T: Encodable>(_ value: T, parent: JSONSlot?, key: (any CodingKey)?) throws {
        if T.self == String.self {
            writeString(unsafeBitCast(value, to: String.self))
        } else if T.self == Date.self {
            bytes.append(UInt8(ascii: "\""))
            writeDate(unsafeBitCast(value, to: Date.self), &bytes)
            bytes.append(UInt8(ascii: "\""))
        } else if T.self == Int.self {
            writeInteger(unsafeBitCast(value, to: Int.self))
        } else if T.self == Double.self {
            try writeDouble(unsafeBitCast(value, to: Double.self), at: JSONSlot.path(parent, key))
        } else if T.self == Bool.self {
            writeBool(unsafeBitCast(value, to: Bool.self))
        } else {
            let slot = JSONSlot(parent: parent, key: key)
            try value.encode(to: SlotEncoder(output: self, slot: slot))
            finish(slot)
        }
    }

    /// Closes what `slot` opened (and any nested container still open inside it); a value that wrote nothing is `{}`.
    func finish(_ slot: JSONSlot) {
        if let child = slot.openChild {
            slot.openChild = nil
            finish(child)
        }
        switch slot.kind {
        case .empty: bytes.append(contentsOf: [UInt8(ascii: "{"), UInt8(ascii: "}")])
        case .object: bytes.append(UInt8(ascii: "}"))
        case .array: bytes.append(UInt8(ascii: "]"))
        case .single: break
        }
        slot.kind = .single
    }

    /// Starts the next element of an open container: closes a nested container left open, writes the comma.
    func beginElement(in slot: JSONSlot) {
        if let child = slot.openChild {
            slot.openChild = nil
            finish(child)
        }
        if slot.count > 0 { bytes.append(UInt8(ascii: ",")) }
        slot.count += 1
    }

    func writeKey(_ key: String) {
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
    }

    func writeNull() {
        bytes.append(contentsOf: [UInt8(ascii: "n"), UInt8(ascii: "u"), UInt8(ascii: "l"), UInt8(ascii: "l")])
    }

    func writeBool(_ value: Bool) {
        bytes.append(contentsOf: value ? Array("true".utf8) : Array("false".utf8))
    }

    func writeInteger<I: BinaryInteger>(_ value: I) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // Digits from the back of a scratch buffer: 40 holds any 128-bit magnitude.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { buffer in
            var index = 40
            while magnitude > 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[index...]))
        }
    }

    /// `path` is only read to report a non-finite number.
    func writeDouble(_ value: Double, at path: @autoclosure () -> [any CodingKey]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: path(), debugDescription: "Unable to encode \(value) directly in JSON."))
        }
        if value == value.rounded(), abs(value) < 1e15 {
            writeInteger(Int64(value))
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    func writeFloatingPoint<F: BinaryFloatingPoint>(_ value: F, at path: @autoclosure () -> [any CodingKey]) throws {
        try writeDouble(Double(value), at: path())
    }

    /// A JSON string: quote, backslash and control characters escaped; everything else (slashes, non-ASCII) as is.
    func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            // Most strings need no escape: one scan, one copy.
            guard utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                bytes.append(contentsOf: utf8)
                return
            }
            var start = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [
                        UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                    ])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// What one value has written so far, and where it sits (its coding path is only built when asked for). Its state is
/// unchecked for exclusivity, as ``JSONOutput``'s is.
final class JSONSlot {
    enum Kind { case empty, object, array, single }
    @exclusivity(unchecked) var kind = Kind.empty
    /// Elements written into the open object or array.
    @exclusivity(unchecked) var count = 0
    /// A nested container (or super-encoder) of this one that is still open.
    @exclusivity(unchecked) var openChild: JSONSlot?
    let parent: JSONSlot?
    let key: (any CodingKey)?

    init(parent: JSONSlot?, key: (any CodingKey)?) {
        self.parent = parent
        self.key = key
    }

    var codingPath: [any CodingKey] { Self.path(parent, key) }

    static func path(_ parent: JSONSlot?, _ key: (any CodingKey)?) -> [any CodingKey] {
        var keys: [any CodingKey] = key.map { [$0] } ?? []
        var slot = parent
        while let current = slot {
            if let key = current.key { keys.append(key) }
            slot = current.parent
        }
        return keys.reversed()
    }
}

struct SlotEncoder: Encoder {
    let output: JSONOutput
    let slot: JSONSlot
    var codingPath: [any CodingKey] { slot.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        open(.object)
        return KeyedEncodingContainer(KeyedSlotContainer<Key>(output: output, slot: slot))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        open(.array)
        return UnkeyedSlotContainer(output: output, slot: slot)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleSlotContainer(output: output, slot: slot)
    }

    /// Opens the object or array on first request; asking again returns the same container, as `JSONEncoder` does.
    func open(_ kind: JSONSlot.Kind) {
        guard slot.kind == .empty else {
            precondition(slot.kind == kind, "a value asked for two different containers")
            return
        }
        slot.kind = kind
        output.bytes.append(kind == .object ? UInt8(ascii: "{") : UInt8(ascii: "["))
    }
}

private struct KeyedSlotContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let output: JSONOutput
    let slot: JSONSlot
    var codingPath: [any CodingKey] { slot.codingPath }

    private func begin(_ key: Key) {
        output.beginElement(in: slot)
        output.writeKey(key.stringValue)
    }

    mutating func encodeNil(forKey key: Key) throws {
        begin(key)
        output.writeNull()
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        begin(key)
        output.writeBool(value)
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        begin(key)
        output.writeString(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        begin(key)
        try output.writeDouble(value, at: JSONSlot.path(slot, key))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        begin(key)
        try output.writeFloatingPoint(value, at: JSONSlot.path(slot, key))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int16, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int32, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        begin(key)
        output.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        begin(key)
        try output.write(value, parent: slot, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<
        NestedKey
    > {
        SlotEncoder(output: output, slot: openChild(key)).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        SlotEncoder(output: output, slot: openChild(key)).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let key = SuperKey.super
        output.beginElement(in: slot)
        output.writeKey(key.stringValue)
        let child = JSONSlot(parent: slot, key: key)
        slot.openChild = child
        return SlotEncoder(output: output, slot: child)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        SlotEncoder(output: output, slot: openChild(key))
    }

    private func openChild(_ key: Key) -> JSONSlot {
        begin(key)
        let child = JSONSlot(parent: slot, key: key)
        slot.openChild = child
        return child
    }
}

private enum SuperKey: String, CodingKey { case `super` }

private struct UnkeyedSlotContainer: UnkeyedEncodingContainer {
    let output: JSONOutput
    let slot: JSONSlot
    var codingPath: [any CodingKey] { slot.codingPath }
    var count: Int { slot.count }

    private func begin() { output.beginElement(in: slot) }

    mutating func encodeNil() throws {
        begin()
        output.writeNull()
    }
    mutating func encode(_ value: Bool) throws {
        begin()
        output.writeBool(value)
    }
    mutating func encode(_ value: String) throws {
        begin()
        output.writeString(value)
    }
    mutating func encode(_ value: Double) throws {
        begin()
        try output.writeDouble(value, at: JSONSlot.path(slot, IndexKey(count - 1)))
    }
    mutating func encode(_ value: Float) throws {
        begin()
        try output.writeFloatingPoint(value, at: JSONSlot.path(slot, IndexKey(count - 1)))
    }
    mutating func encode(_ value: Int) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int8) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int16) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int32) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int64) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt8) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt16) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt32) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt64) throws {
        begin()
        output.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        begin()
        try output.write(value, parent: slot, key: IndexKey(count - 1))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        SlotEncoder(output: output, slot: openChild()).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        SlotEncoder(output: output, slot: openChild()).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        SlotEncoder(output: output, slot: openChild())
    }

    private func openChild() -> JSONSlot {
        begin()
        let child = JSONSlot(parent: slot, key: IndexKey(count - 1))
        slot.openChild = child
        return child
    }
}

private struct SingleSlotContainer: SingleValueEncodingContainer {
    let output: JSONOutput
    let slot: JSONSlot
    var codingPath: [any CodingKey] { slot.codingPath }

    private func begin() {
        precondition(slot.kind == .empty, "a single value container was written twice")
        slot.kind = .single
    }

    mutating func encodeNil() throws {
        begin()
        output.writeNull()
    }
    mutating func encode(_ value: Bool) throws {
        begin()
        output.writeBool(value)
    }
    mutating func encode(_ value: String) throws {
        begin()
        output.writeString(value)
    }
    mutating func encode(_ value: Double) throws {
        begin()
        try output.writeDouble(value, at: slot.codingPath)
    }
    mutating func encode(_ value: Float) throws {
        begin()
        try output.writeFloatingPoint(value, at: slot.codingPath)
    }
    mutating func encode(_ value: Int) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int8) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int16) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int32) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: Int64) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt8) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt16) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt32) throws {
        begin()
        output.writeInteger(value)
    }
    mutating func encode(_ value: UInt64) throws {
        begin()
        output.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        // The single value stands in this slot's place: same parent, same key.
        begin()
        try output.write(value, parent: slot.parent, key: slot.key)
    }
}
