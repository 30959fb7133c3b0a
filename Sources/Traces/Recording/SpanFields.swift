/// A recorded span's attributes as this recorder keeps them: keys and typed values in one array, in the order they
/// were first set, a key set again replacing its value. The exporter writes them as they are.
///
/// Instead of swift-distributed-tracing's `SpanAttributes`, a dictionary of an enum that can hold any
/// `CustomStringConvertible`: building a worker's consumer span's 10 attributes in it (hashing each key, copying each
/// value through its value witnesses), and copying and walking it again to export it, was half of what a recorded
/// span cost (perf, 2026-11-29: 8% of a no-op worker's CPU at 100% sampling). The spans are small, so a key is found
/// by a scan. `SpanAttributes` still works on a ``RecordedSpan`` (``RecordedSpan/attributes``), converted.
public struct SpanFields: Sendable {
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)
        case double(Double)
        /// An array, or anything else `SpanAttribute` holds, kept as it came.
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

    public private(set) var entries: [(key: String, value: Value)] = []

    public init(capacity: Int = 0) {
        entries.reserveCapacity(capacity)
    }

    public init(_ attributes: SpanAttributes) {
        // swift-format-ignore: ReplaceForEachWithForLoop
        attributes.forEach { key, value in entries.append((key, Value(value))) }  // SpanAttributes is no Sequence
    }

    public var isEmpty: Bool { entries.isEmpty }

    public subscript(key: String) -> Value? {
        entries.first { $0.key == key }?.value
    }

    /// Sets `key` to `value`, replacing its value if it is set.
    public mutating func set(_ key: String, _ value: Value) {
        guard let index = entries.firstIndex(where: { $0.key == key }) else { return entries.append((key, value)) }
        entries[index].value = value
    }

    /// Adds `key`, which is not set yet: what a span's attributes are built with, without the scan for it.
    public mutating func append(_ key: String, _ value: Value) {
        assert(self[key] == nil, "\(key) is set already")
        entries.append((key, value))
    }

    /// Sets each of `fields`, in their order.
    public mutating func set(_ fields: SpanFields) {
        guard !entries.isEmpty else {
            self = fields
            return
        }
        for (key, value) in fields.entries { set(key, value) }
    }

    /// The same as `SpanAttributes`, for the `Span` protocol's readers.
    public var attributes: SpanAttributes {
        var attributes = SpanAttributes()
        for (key, value) in entries { attributes[key] = value.attribute }
        return attributes
    }
}

extension SpanFields.Value {
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
