import Foundation

/// Decodes `Decodable` types from JSON text through ``JSONParser`` and a ``JSONValue`` tree: the hot paths' replacement
/// for Foundation's `JSONDecoder` (request bodies, job payloads).
///
/// Errors are Foundation's `DecodingError`s, with the same cases and coding paths as `JSONDecoder` gives: text that is
/// not JSON is `.dataCorrupted` at the root, a missing member `.keyNotFound`, a `null` where a value is needed
/// `.valueNotFound`, another JSON type `.typeMismatch`, and a number that does not fit its Swift type `.dataCorrupted`.
/// `Date`s are decoded by `dateParser` from strings when one is given, else as `Date`'s own `Decodable` does.
public struct JSONValueDecoder: Sendable {
    public var dateParser: (@Sendable (String) -> Date?)?
    /// When set, an optional member sent as `null` is `.valueNotFound` unless its type lists it in
    /// ``NullableMembers`` (request bodies: a document that says `nullable` only where null means something).
    public var refusesUndeclaredNulls: Bool

    public init(dateParser: (@Sendable (String) -> Date?)? = nil, refusesUndeclaredNulls: Bool = false) {
        self.dateParser = dateParser
        self.refusesUndeclaredNulls = refusesUndeclaredNulls
    }

    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try DecoderNode(value: value, parentPath: [], key: nil, decoder: self).unwrap(T.self)
    }

    /// Parses `text`, then decodes `T` from it.
    public func decode<T: Decodable>(_ type: T.Type, fromJSON text: String) throws -> T {
        try decode(T.self, from: Self.parse { () throws(JSONParseError) in try JSONParser.parse(text) })
    }

    public func decode<T: Decodable>(_ type: T.Type, fromJSON bytes: [UInt8]) throws -> T {
        try decode(T.self, from: Self.parse { () throws(JSONParseError) in try JSONParser.parse(bytes) })
    }

    /// A parse error as `JSONDecoder` reports it: data corrupted at the root, with the parser's reason.
    public static func parse(_ body: () throws(JSONParseError) -> JSONValue) throws(DecodingError) -> JSONValue {
        do {
            return try body()
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: [], debugDescription: "The given data was not valid JSON: \(error)", underlyingError: error))
        }
    }
}

/// A type whose optional members may be sent as `null`: only these, when the decoder
/// ``JSONValueDecoder/refusesUndeclaredNulls``.
public protocol NullableMembers {
    static var nullableMembers: Set<String> { get }
}

/// An array index in a coding path, as `JSONDecoder` names it.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

/// One value of the tree being decoded, with its place in it: the `Decoder` handed to `init(from:)` and its
/// single-value container. The place is kept as the parent's path and this value's key, and joined only when asked
/// for (errors, nested containers): a new array per member read was half of decoding a small payload.
/// ``JSONMembers`` reads through it too, so the two refuse alike.
struct DecoderNode: Decoder, SingleValueDecodingContainer {
    let value: JSONValue
    let parentPath: [any CodingKey]
    let key: (any CodingKey)?
    let decoder: JSONValueDecoder
    /// The members this object may send as `null`; nil: any.
    var nullable: Set<String>? = nil
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var codingPath: [any CodingKey] { key.map { parentPath + [$0] } ?? parentPath }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(Keyed<Key>(members: members, codingPath: codingPath, decoder: decoder, nullable: nullable))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch([Any].self) }
        return Unkeyed(items: items, codingPath: codingPath, decoder: decoder)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// `null` where a value is needed is `.valueNotFound`; any other JSON type `.typeMismatch`.
    func mismatch(_ type: Any.Type) -> DecodingError {
        if case .null = value {
            return .valueNotFound(
                type, .init(codingPath: codingPath, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        }
        return .typeMismatch(
            type, .init(codingPath: codingPath, debugDescription: "Expected to decode \(type) but found \(value.typeName) instead."))
    }

    func unwrap<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == JSONValue.self { return value as! T }
        if T.self == String.self { return try decode(String.self) as! T }
        if T.self == Date.self, let parse = decoder.dateParser {
            let text = try decode(String.self)
            guard let date = parse(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "must be an ISO 8601 date-time"))
            }
            return date as! T
        }
        if decoder.refusesUndeclaredNulls {
            var node = self
            node.nullable = (T.self as? any NullableMembers.Type)?.nullableMembers ?? []
            return try T(from: node)
        }
        return try T(from: self)
    }

    // MARK: SingleValueDecodingContainer

    func decodeNil() -> Bool {
        if case .null = value { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(Bool.self) }
        return flag
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let text) = value else { throw mismatch(String.self) }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double {
        switch value {
        case .int(let number): return Double(number)
        case .double(let number): return number
        default: throw mismatch(Double.self)
        }
    }

    func decode(_ type: Float.Type) throws -> Float {
        let number = try decode(Double.self)
        let narrowed = Float(number)
        guard narrowed.isFinite else { throw notRepresentable(number, Float.self) }
        return narrowed
    }

    func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        switch value {
        case .int(let number):
            guard let exact = I(exactly: number) else { throw notRepresentable(number, I.self) }
            return exact
        case .double(let number):
            guard let exact = I(exactly: number) else { throw notRepresentable(number, I.self) }
            return exact
        default:
            throw mismatch(I.self)
        }
    }

    func notRepresentable(_ number: Any, _ type: Any.Type) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath, debugDescription: "Parsed JSON number <\(number)> does not fit in \(type)."))
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unwrap(T.self) }
}

struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]
    let decoder: JSONValueDecoder
    let nullable: Set<String>?

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    func node(_ key: Key) throws -> DecoderNode {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return DecoderNode(value: value, parentPath: codingPath, key: key, decoder: decoder)
    }

    /// One lookup for a member that may be missing or null (the default implementations make three).
    func present(_ key: Key) throws -> DecoderNode? {
        guard let value = members[key.stringValue] else { return nil }
        if case .null = value {
            if let nullable, !nullable.contains(key.stringValue) {
                throw DecodingError.valueNotFound(
                    Any.self, .init(codingPath: codingPath + [key], debugDescription: "null is not allowed for \(key.stringValue)"))
            }
            return nil
        }
        return DecoderNode(value: value, parentPath: codingPath, key: key, decoder: decoder)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try present(key)?.unwrap(T.self) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(key)?.decode(Bool.self) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(key)?.decode(String.self) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(key)?.decode(Double.self) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try present(key)?.decode(Float.self) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(key)?.integer(Int.self) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try present(key)?.integer(Int8.self) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try present(key)?.integer(Int16.self) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(key)?.integer(Int32.self) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(key)?.integer(Int64.self) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(key)?.integer(UInt.self) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try present(key)?.integer(UInt8.self) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try present(key)?.integer(UInt16.self) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try present(key)?.integer(UInt32.self) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(key)?.integer(UInt64.self) }

    func decodeNil(forKey key: Key) throws -> Bool { try node(key).decodeNil() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try node(key).decode(Bool.self) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try node(key).decode(String.self) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try node(key).decode(Double.self) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try node(key).decode(Float.self) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try node(key).integer(Int.self) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try node(key).integer(Int8.self) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try node(key).integer(Int16.self) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try node(key).integer(Int32.self) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try node(key).integer(Int64.self) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try node(key).integer(UInt.self) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try node(key).integer(UInt8.self) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try node(key).integer(UInt16.self) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try node(key).integer(UInt32.self) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try node(key).integer(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try node(key).unwrap(T.self) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try node(key).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try node(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        DecoderNode(value: members["super"] ?? .null, parentPath: codingPath, key: nil, decoder: decoder)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        DecoderNode(value: members[key.stringValue] ?? .null, parentPath: codingPath, key: key, decoder: decoder)
    }
}

private struct Unkeyed: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    let decoder: JSONValueDecoder
    var currentIndex = 0

    init(items: [JSONValue], codingPath: [any CodingKey], decoder: JSONValueDecoder) {
        self.items = items
        self.codingPath = codingPath
        self.decoder = decoder
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    /// The next element's node; the index moves on only once it decoded (as `JSONDecoder`'s does).
    mutating func next<T>(_ type: Any.Type, _ body: (DecoderNode) throws -> T) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "Unkeyed container is at end."))
        }
        let node = DecoderNode(value: items[currentIndex], parentPath: codingPath, key: IndexKey(currentIndex), decoder: decoder)
        let result = try body(node)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, case .null = items[currentIndex] else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try $0.decode(Bool.self) } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { try $0.decode(String.self) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) { try $0.decode(Double.self) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) { try $0.decode(Float.self) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { try $0.integer(Int.self) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { try $0.integer(Int8.self) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) { try $0.integer(Int16.self) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) { try $0.integer(Int32.self) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) { try $0.integer(Int64.self) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { try $0.integer(UInt.self) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) { try $0.integer(UInt8.self) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) { try $0.integer(UInt16.self) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) { try $0.integer(UInt32.self) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) { try $0.integer(UInt64.self) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type) { try $0.unwrap(T.self) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next([String: Any].self) { try $0.container(keyedBy: NestedKey.self) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([Any].self) { try $0.unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next(Any.self) { $0 }
    }
}
