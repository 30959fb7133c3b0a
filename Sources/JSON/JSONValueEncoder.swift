/// Encodes `Encodable` values to a ``JSONValue`` tree: typed job parameters to the payload the queue checks against
/// the kind's schema, and handlers' typed results to the text kept with their jobs. The counterpart of
/// ``JSONValueDecoder``.
///
/// The tree is what a hand-built `JSONValue` of the same members would be: integers are `.int` and floating-point
/// numbers `.double` (a whole `Double` keeps its `.0` in ``JSONValue/jsonString``), and a member is `null` only where
/// the type encodes one itself (synthesized conformances leave a nil optional out, with `encodeIfPresent`). An
/// integer outside `Int` or a non-finite number is refused, as `JSONEncoder` refuses it; a value that encodes
/// nothing is `{}`.
public struct JSONValueEncoder: Sendable {
    public init() {}

    public func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        try Node.encoded(value, at: [])
    }
}

/// One value being encoded. Containers write into it while they are used, so a nested container handed out by a
/// parent's container still lands in the parent after the parent's own `encode(to:)` moved on.
private final class Node: Encoder {
    /// An array element: finished, or a node a nested container may still write into.
    enum Slot {
        case value(JSONValue)
        case node(Node)

        var value: JSONValue {
            switch self {
            case .value(let value): value
            case .node(let node): node.value
            }
        }
    }

    enum Kind { case empty, single, object, array }

    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var kind = Kind.empty
    var single = JSONValue.null
    var members: [String: JSONValue] = [:]
    /// Members a nested container may still write into; read when the value is.
    var nestedMembers: [String: Node] = [:]
    var items: [Slot] = []

    init(codingPath: [any CodingKey]) {
        self.codingPath = codingPath
    }

    var value: JSONValue {
        switch kind {
        case .empty: .object([:])
        case .single: single
        case .object: .object(nestedMembers.isEmpty ? members : members.merging(nestedMembers.mapValues(\.value)) { $1 })
        case .array: .array(items.map(\.value))
        }
    }

    /// `value` as a finished tree; a `JSONValue` (a noop job's result) is taken as it is.
    static func encoded<T: Encodable>(_ value: T, at codingPath: [any CodingKey]) throws -> JSONValue {
        if let value = value as? JSONValue { return value }
        let node = Node(codingPath: codingPath)
        try value.encode(to: node)
        return node.value
    }

    static func number<I: BinaryInteger>(_ value: I, at codingPath: [any CodingKey]) throws -> JSONValue {
        guard let exact = Int(exactly: value) else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "\(value) does not fit Int"))
        }
        return .int(exact)
    }

    static func number(_ value: Double, at codingPath: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: codingPath, debugDescription: "Unable to encode \(value) directly in JSON."))
        }
        return .double(value)
    }

    /// Asking again for the container a value already opened returns it, as `JSONEncoder` does.
    func open(_ kind: Kind) {
        precondition(self.kind == .empty || self.kind == kind, "a value asked for two different containers")
        self.kind = kind
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        open(.object)
        return KeyedEncodingContainer(KeyedContainer<Key>(node: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        open(.array)
        return UnkeyedContainer(node: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleContainer(node: self) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    var codingPath: [any CodingKey] { node.codingPath }

    private func set(_ value: JSONValue, _ key: Key) {
        node.members[key.stringValue] = value
        if !node.nestedMembers.isEmpty { node.nestedMembers[key.stringValue] = nil }
    }
    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(try Node.number(value, at: path(key)), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(try Node.number(Double(value), at: path(key)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(try Node.number(value, at: path(key)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(try Node.number(value, at: path(key)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(try Node.number(value, at: path(key)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(try Node.number(value, at: path(key)), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { set(try Node.encoded(value, at: path(key)), key) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<
        NestedKey
    > {
        child(key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { child(key).unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { child(SuperKey.super) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { child(key) }

    private func child(_ key: any CodingKey) -> Node {
        let child = Node(codingPath: codingPath + [key])
        node.members[key.stringValue] = nil
        node.nestedMembers[key.stringValue] = child
        return child
    }
}

private enum SuperKey: String, CodingKey { case `super` }

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: Node
    var codingPath: [any CodingKey] { node.codingPath }
    var count: Int { node.items.count }

    private func append(_ value: JSONValue) { node.items.append(.value(value)) }
    private var path: [any CodingKey] { codingPath + [IndexKey(count)] }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try Node.number(value, at: path)) }
    mutating func encode(_ value: Float) throws { append(try Node.number(Double(value), at: path)) }
    mutating func encode(_ value: Int) throws { append(.int(value)) }
    mutating func encode(_ value: Int8) throws { append(.int(Int(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int(value))) }
    mutating func encode(_ value: Int64) throws { append(try Node.number(value, at: path)) }
    mutating func encode(_ value: UInt) throws { append(try Node.number(value, at: path)) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt32) throws { append(try Node.number(value, at: path)) }
    mutating func encode(_ value: UInt64) throws { append(try Node.number(value, at: path)) }
    mutating func encode<T: Encodable>(_ value: T) throws { append(try Node.encoded(value, at: path)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        child().container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { child().unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { child() }

    private func child() -> Node {
        let child = Node(codingPath: path)
        node.items.append(.node(child))
        return child
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let node: Node
    var codingPath: [any CodingKey] { node.codingPath }

    private func set(_ value: JSONValue) {
        precondition(node.kind == .empty, "a single value container was written twice")
        node.kind = .single
        node.single = value
    }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try Node.number(value, at: codingPath)) }
    mutating func encode(_ value: Float) throws { set(try Node.number(Double(value), at: codingPath)) }
    mutating func encode(_ value: Int) throws { set(.int(value)) }
    mutating func encode(_ value: Int8) throws { set(.int(Int(value))) }
    mutating func encode(_ value: Int16) throws { set(.int(Int(value))) }
    mutating func encode(_ value: Int32) throws { set(.int(Int(value))) }
    mutating func encode(_ value: Int64) throws { set(try Node.number(value, at: codingPath)) }
    mutating func encode(_ value: UInt) throws { set(try Node.number(value, at: codingPath)) }
    mutating func encode(_ value: UInt8) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt16) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt32) throws { set(try Node.number(value, at: codingPath)) }
    mutating func encode(_ value: UInt64) throws { set(try Node.number(value, at: codingPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws { set(try Node.encoded(value, at: codingPath)) }
}
