/// A recorded span's attributes as this recorder keeps them: already written as the exporter sends them, OTLP
/// `KeyValue` messages in the `Span` message's field 9, in the order they were set. A key set again is taken out and
/// written anew at the end.
///
/// Instead of swift-distributed-tracing's `SpanAttributes`, a dictionary of an enum that can hold any
/// `CustomStringConvertible`: building a worker's consumer span's 10 attributes in it (hashing each key, copying each
/// value through its value witnesses), copying and walking it again to export it, and freeing it, was half of what a
/// recorded span cost (perf, 2026-11-29: 8% of a no-op worker's CPU at 100% sampling). An array of typed values still
/// spent a third of that on copying and freeing them. Written once, the attributes are one buffer the exporter copies
/// whole. `SpanAttributes` still works on a ``RecordedSpan`` (``RecordedSpan/attributes``), converted both ways.
public struct SpanFields: Sendable {
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)
        case double(Double)
        /// An array, or anything else `SpanAttribute` holds (read back as OTLP has it: an array, or a string).
        case other(SpanAttribute)

        public static func == (lhs: Value, rhs: Value) -> Bool {
            switch (lhs, rhs) {
            case (.string(let left), .string(let right)): left == right
            case (.int(let left), .int(let right)): left == right
            case (.bool(let left), .bool(let right)): left == right
            case (.double(let left), .double(let right)): left == right
            case (.other(let left), .other(let right)): left == right
            default: false
            }
        }
    }

    /// The `Span` message's field 9.
    private static let field: UInt64 = 9

    private var writer: ProtobufWriter

    /// `capacity`: how many attributes to make room for.
    public init(capacity: Int = 0) {
        writer = ProtobufWriter(capacity: capacity * 48)
    }

    public init(_ attributes: SpanAttributes) {
        writer = ProtobufWriter()
        writer.keyValues(Self.field, attributes)
    }

    /// Attributes already written as `Span.attributes` entries (read back from a span's bytes).
    init(encoded: [UInt8]) {
        writer = ProtobufWriter()
        writer.append(encoded: encoded)
    }

    /// The attributes as OTLP `Span.attributes` entries, tags included.
    public var encoded: [UInt8] { writer.bytes }

    public var isEmpty: Bool { writer.bytes.isEmpty }

    /// Adds `key`, which is not set yet: what a span's attributes are built with, without the search for it.
    public mutating func append(_ key: String, _ value: Value) {
        #if DEBUG
            assert(self[key] == nil, "\(key) is set already")
        #endif
        if writer.shortKeyValue(Self.field, key, value) { return }
        writer.message(Self.field) { $0.keyValue(key, value) }
    }

    /// Adds each of `fields`, none of which is set yet, as they were written (a copy of their bytes).
    public mutating func append(contentsOf fields: SpanFields) {
        #if DEBUG
            assert(fields.entries.allSatisfy { self[$0.key] == nil }, "a key of \(fields.entries.map(\.key)) is set already")
        #endif
        writer.append(encoded: fields.writer.bytes)
    }

    /// Sets `key` to `value`, replacing its value if it is set.
    public mutating func set(_ key: String, _ value: Value) {
        if let range = Self.entries(in: writer.bytes).first(where: { $0.key == key })?.range { writer.remove(range) }
        if writer.shortKeyValue(Self.field, key, value) { return }
        writer.message(Self.field) { $0.keyValue(key, value) }
    }

    /// Sets each of `fields`, in their order.
    public mutating func set(_ fields: SpanFields) {
        guard !isEmpty else {
            self = fields
            return
        }
        for (key, value) in fields.entries { set(key, value) }
    }

    /// The value of `key`, read back.
    public subscript(key: String) -> Value? {
        entries.first { $0.key == key }?.value
    }

    /// The attributes read back, in their order: for the `Span` protocol's readers and for tests.
    public var entries: [(key: String, value: Value)] {
        Self.entries(in: writer.bytes).map { ($0.key, $0.value) }
    }

    /// The same as `SpanAttributes`.
    public var attributes: SpanAttributes {
        var attributes = SpanAttributes()
        for (key, value) in entries { attributes[key] = value.attribute }
        return attributes
    }

    /// Each `KeyValue` written in `bytes`, where it is, its key and its value.
    private static func entries(in bytes: [UInt8]) -> [(range: Range<Int>, key: String, value: Value)] {
        var entries: [(range: Range<Int>, key: String, value: Value)] = []
        var start = 0
        // Each one is field 9's tag, its length and the message: read one at a time to know where each begins.
        while start < bytes.count, let field = ProtobufReader.first(of: bytes[start...]) {
            let end = field.end
            guard case .bytes(let message) = field.value, let keyValue = ProtobufReader.fields(of: message) else { break }
            let key = keyValue.first { $0.field == 1 }.flatMap { $0.value.text } ?? ""
            let value = keyValue.first { $0.field == 2 }.flatMap { field -> Value? in
                guard case .bytes(let any) = field.value else { return nil }
                return Value(anyValue: any)
            }
            entries.append((start..<end, key, value ?? .string("")))
            start = end
        }
        return entries
    }
}

extension SpanFields.Value {
    /// An OTLP `AnyValue` message's value.
    init?(anyValue bytes: ArraySlice<UInt8>) {
        guard let (field, value) = ProtobufReader.fields(of: bytes)?.first else { return nil }
        switch (field, value) {
        case (1, .bytes(let text)): self = .string(String(decoding: text, as: UTF8.self))
        case (2, .number(let flag)): self = .bool(flag != 0)
        case (3, .number(let number)): self = .int(Int64(bitPattern: number))
        case (4, .number(let bits)): self = .double(Double(bitPattern: bits))
        case (5, .bytes(let array)):
            let values = (ProtobufReader.fields(of: array) ?? []).compactMap { element -> Self? in
                guard case .bytes(let any) = element.value else { return nil }
                return Self(anyValue: any)
            }
            self = .other(Self.array(values))
        default: return nil
        }
    }

    /// An `ArrayValue`'s values as the `SpanAttribute` array of their type (strings for a mix).
    private static func array(_ values: [Self]) -> SpanAttribute {
        let bools = values.compactMap { if case .bool(let flag) = $0 { flag } else { nil } }
        let ints = values.compactMap { if case .int(let number) = $0 { number } else { nil } }
        let doubles = values.compactMap { if case .double(let number) = $0 { number } else { nil } }
        if !values.isEmpty, bools.count == values.count { return .boolArray(bools) }
        if !values.isEmpty, ints.count == values.count { return .int64Array(ints) }
        if !values.isEmpty, doubles.count == values.count { return .doubleArray(doubles) }
        return .stringArray(values.map { if case .string(let text) = $0 { text } else { "\($0.attribute)" } })
    }

    init(_ attribute: SpanAttribute) {
        switch attribute {
        case .string(let text): self = .string(text)
        case .int64(let number): self = .int(number)
        case .int32(let number): self = .int(Int64(number))
        case .bool(let flag): self = .bool(flag)
        case .double(let number): self = .double(number)
        default: self = .other(attribute)
        }
    }

    var attribute: SpanAttribute {
        switch self {
        case .string(let text): .string(text)
        case .int(let number): .int64(number)
        case .bool(let flag): .bool(flag)
        case .double(let number): .double(number)
        case .other(let attribute): attribute
        }
    }
}

extension SpanFields.Value: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension SpanFields: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, Value)...) {
        self.init(capacity: elements.count)
        for (key, value) in elements { set(key, value) }
    }
}
