import Foundation

/// A JSON value, as job payloads, results and schemas carry it.
///
/// Integers stay integers: JSON Schema's `integer` type and uniqueness keys such as `push:${id}` need
/// `7` to stay `7`, not `7.0`.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses JSON text (``JSONParser``); throws `DecodingError.dataCorrupted` on anything that is not JSON.
    public init(parsing json: String) throws {
        self = try JSONValueDecoder.parse { () throws(JSONParseError) in try JSONParser.parse(json) }
    }

    /// Decodes Bool before Int so that `true` never becomes `1`, and Int before Double so that
    /// `7` stays an integer.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member `key` of an object; nil for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// Compact JSON with sorted keys, so equal values always give the same bytes (usable in keys and
    /// hashes). Non-finite doubles, which JSON cannot carry, are written as `null`.
    public var jsonString: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value): out += value.isFinite ? "\(value)" : "null"
        case .string(let value): JSONValue.writeString(value, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            // Sorted as pairs: sorting the keys and looking each up again hashed every key once more (every job's
            // payload is written here).
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out += "," }
                JSONValue.writeString(member.key, to: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
    }

    /// Appends `string` to `out` as a JSON string, quoted and escaped (a log line's values, written as bytes without
    /// a `JSONValue` and its own string each). Most need no escape and are copied whole; the rest go through
    /// `writeString`'s scalar loop, so both ways escape alike.
    public static func appendQuoted(_ string: String, to out: inout [UInt8]) {
        var string = string
        let copied = string.withUTF8 { utf8 -> Bool in
            guard utf8.allSatisfy(isPlain) else { return false }
            out.append(0x22)
            out.append(contentsOf: utf8)
            out.append(0x22)
            return true
        }
        guard !copied else { return }
        var quoted = ""
        writeString(string, to: &quoted)
        out.append(contentsOf: quoted.utf8)
    }

    /// A byte written as it is inside a JSON string. 0xE2 leads U+2028 and U+2029 (and other punctuation, which the
    /// scalar loop passes through unchanged).
    private static func isPlain(_ byte: UInt8) -> Bool { byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte != 0xE2 }

    private static func writeString(_ string: String, to out: inout String) {
        out += "\""
        // Most strings need no escape: appended whole.
        // Scanned as a buffer when the string has one (native strings do): the byte-by-byte UTF8View was 6% of an
        // analysis worker's CPU on its 44 KB photo data URL.
        if string.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(isPlain) }) ?? string.utf8.allSatisfy(isPlain) {
            out += string
            out += "\""
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\u{2028}": out += "\\u2028"  // valid JSON raw, but breaks JavaScript consumers
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

extension JSONValue {
    /// A short name of the value's JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The value as a Double when it is a number (integer or not).
    public var numberValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// JSON equality: `1` equals `1.0`, as JSON Schema's `enum` and `const` require.
    public func jsonEquals(_ other: JSONValue) -> Bool {
        switch (self, other) {
        case (.int(let a), .int(let b)): return a == b
        case (.int, .double), (.double, .int), (.double, .double):
            return numberValue == other.numberValue
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.jsonEquals($1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map(value.jsonEquals) ?? false }
        default:
            return self == other
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
