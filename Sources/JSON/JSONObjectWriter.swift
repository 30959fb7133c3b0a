import Foundation

/// Writes an object's members straight into a ``StreamingJSONEncoder``'s output, skipping Codable's keyed container:
/// through it, each member costs a boxed call and a generic metadata lookup, which on a page of 20 meals was 14% of
/// `GET /meals`'s CPU (perf, 2026-11-28). A type whose encoding is that hot asks its encoder for one
/// (``Swift/Encoder/streamingObject()``) and falls back to its keyed encoding when it gets none, so it still encodes
/// through any other encoder; a test holds the two to the same output. It writes the member types `MealDTO` has; add
/// others as a hot type needs them.
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
}

/// A member's name as a coding key, for the coding path of an error.
private struct MemberKey: CodingKey {
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
