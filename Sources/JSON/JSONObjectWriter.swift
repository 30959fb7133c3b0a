import Foundation

/// Writes an object's members straight into a ``StreamingJSONEncoder``'s output, skipping Codable's keyed container:
/// through it, each member costs a boxed call and a generic metadata lookup, which on a page of 20 meals was 14% of
/// `GET /meals`'s CPU (perf, 2026-11-28). A type whose encoding is that hot asks its encoder for one
/// (``Swift/Encoder/streamingObject()``) and falls back to its keyed encoding when it gets none, so it still encodes
/// through any other encoder; a test holds the two to the same output. It writes the member types the API's hot answers
/// have; add others as a hot type needs them.
public struct JSONObjectWriter {
    let output: JSONOutput
    let slot: JSONSlot

    private func begin(_ key: String) {
        output.beginElement(in: slot)
        output.writeKey(key)
    }

    public func write(_ key: String, _ value: String) {
        begin(key)
        output.writeString(value)
    }

    /// A nil value is written as `null` (not left out), as seed 001's bodies have it.
    public func write(_ key: String, _ value: String?) {
        begin(key)
        if let value { output.writeString(value) } else { output.writeNull() }
    }

    public func write(_ key: String, _ value: Bool) {
        begin(key)
        output.writeBool(value)
    }

    public func write(_ key: String, _ value: Int) {
        begin(key)
        output.writeInteger(value)
    }

    public func write(_ key: String, _ value: Int64) {
        begin(key)
        output.writeInteger(value)
    }

    /// Non-finite numbers are refused, as by the keyed container.
    public func write(_ key: String, _ value: Double) throws {
        begin(key)
        try output.writeDouble(value, at: JSONSlot.path(slot, MemberKey(key)))
    }

    public func write(_ key: String, _ value: Date) {
        begin(key)
        output.bytes.append(UInt8(ascii: "\""))
        output.writeDate(value, &output.bytes)
        output.bytes.append(UInt8(ascii: "\""))
    }

    /// Any other value, through its own `encode(to:)` (a nested object that asks for a ``JSONObjectWriter`` gets one).
    public func write<Value: Encodable>(_ key: String, _ value: Value) throws {
        begin(key)
        try output.write(value, parent: slot, key: MemberKey(key))
    }

    /// An array, each element written as the encoder writes a value: without `Array`'s own `encode(to:)`, whose
    /// unkeyed container costs a boxed call per element (a page of 20 meals: a third of its encoding).
    public func write<Element: Encodable>(_ key: String, elements: [Element]) throws {
        begin(key)
        let array = JSONSlot(parent: slot, key: MemberKey(key))
        array.kind = .array
        output.bytes.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            output.beginElement(in: array)
            try output.write(element, parent: array, key: IndexKey(index))
        }
        output.finish(array)
    }
}

/// A member's name as a coding key, for the coding path of an error.
struct MemberKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Encoder {
    /// The object this value encodes, as a ``JSONObjectWriter``, when `self` is a ``StreamingJSONEncoder``'s; nil for
    /// any other encoder. Asking opens the object, as `container(keyedBy:)` does; the encoder closes it.
    public func streamingObject() -> JSONObjectWriter? {
        // A cast to a concrete type compares metadata; no protocol conformance is looked up.
        guard let encoder = self as? SlotEncoder else { return nil }
        encoder.open(.object)
        return JSONObjectWriter(output: encoder.output, slot: encoder.slot)
    }
}
