import Foundation
import JSON

/// A schema the loader refused: `path` is a JSON pointer into the schema (`/properties/userId/format`).
public struct SchemaError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var reason: String
    /// The keyword itself is wrong (unknown), rather than its value: errors point at the key.
    public var isAboutTheKeyword = false

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}

/// One way a value fails a schema. `path` is a JSON pointer into the value (`/photoId`, `/items/0`,
/// `""` for the value itself), so an API can name the offending field.
public struct SchemaViolation: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

/// The subset of JSON Schema that job payloads need, strict about its own spelling: an unknown
/// keyword is an error, because a misspelt `requird` would otherwise silently accept everything.
///
/// Keywords: `type` (a name or a list; an integer is also a `number`), `properties`, `required`,
/// `additionalProperties` (bool or schema), `enum`, `const`, `minimum`, `maximum`,
/// `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength` (in Unicode code points, as JSON
/// Schema counts), `pattern` (unanchored, `NSRegularExpression` syntax), `format` (`uuid`,
/// `date-time`, `date`, `email`: checked, not just annotations), `items`, `minItems`, `maxItems`, `oneOf` (exactly
/// one branch matches); `description`, `title`, `examples` and `x-…` annotations (the contract generator's) are
/// accepted and ignored.
public struct JSONSchema: Sendable, Equatable {
    enum JSONType: String, Sendable, CaseIterable {
        case string, integer, number, boolean, object, array, null
    }

    enum Format: String, Sendable, CaseIterable {
        case uuid
        case dateTime = "date-time"
        case date
        case email
    }

    indirect enum Subschema: Sendable, Equatable {
        case schema(JSONSchema)
    }

    enum AdditionalProperties: Sendable, Equatable {
        case allowed
        case forbidden
        case schema(Subschema)
    }

    /// The schema as written, for documentation and `jobs` listings.
    public let source: JSONValue

    var types: [JSONType]?
    var properties: [String: JSONSchema] = [:]
    var required: [String] = []
    var additionalProperties: AdditionalProperties = .allowed
    var enumValues: [JSONValue]?
    var constValue: JSONValue?
    var minimum: Double?
    var maximum: Double?
    var exclusiveMinimum: Double?
    var exclusiveMaximum: Double?
    var minLength: Int?
    var maxLength: Int?
    var pattern: CompiledPattern?
    var format: Format?
    var items: Subschema?
    var minItems: Int?
    var maxItems: Int?
    var oneOf: [JSONSchema]?

    /// Accepts every value.
    public static let any = JSONSchema(trusted: .object([:]))

    /// Accepts any JSON object: the default payload schema of a job kind.
    public static let anyObject = JSONSchema(trusted: .object(["type": "object"]))

    private init(trusted source: JSONValue) {
        self = (try? JSONSchema(source)) ?? JSONSchema(empty: source)
    }

    private init(empty source: JSONValue) { self.source = source }

    /// Compiles a schema, refusing unknown keywords, wrong keyword types and contradictions
    /// (`minimum` above `maximum`, `required` naming a property that `additionalProperties: false`
    /// forbids).
    public init(_ schema: JSONValue) throws(SchemaError) {
        try self.init(schema, path: "")
    }

    /// The names the schema declares under `properties`, sorted.
    public var declaredProperties: [String] { properties.keys.sorted() }

    /// Whether the schema can only accept objects (`type: object`).
    public var requiresObject: Bool { types == [.object] }

    /// Whether the schema names `field` as required.
    public func requires(_ field: String) -> Bool { required.contains(field) }

    /// Whether `field` may appear in an object this schema accepts.
    public func allowsProperty(_ field: String) -> Bool {
        properties[field] != nil || additionalProperties != .forbidden
    }
}

/// A schema's `pattern`, compiled once. `NSRegularExpression` is immutable after creation and documented as safe
/// to use from several threads, but is not marked `Sendable`; compiling it per validated string cost more than
/// the rest of an enqueue.
final class CompiledPattern: @unchecked Sendable, Equatable {
    let source: String
    let regex: NSRegularExpression

    init(_ source: String) throws {
        self.source = source
        regex = try NSRegularExpression(pattern: source)
    }

    func matches(_ text: String) -> Bool {
        regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    static func == (lhs: CompiledPattern, rhs: CompiledPattern) -> Bool { lhs.source == rhs.source }
}
