import Foundation
import JSON

/// An OpenAPI 3.0 document as the tests read it: its operations, `$ref` resolution, and a checker of JSON values
/// against its schemas.
struct OpenAPIDocument: Sendable {
    struct Operation: Sendable {
        var method: String
        var path: String
        var object: [String: JSONValue]

        var operationID: String? { object["operationId"].flatMap(\.string) }
        var responses: [String: JSONValue] { object["responses"].flatMap(\.members) ?? [:] }
        /// Whether the operation can be called without a token: no `security`, or one alternative that is `{}`.
        var isPublic: Bool {
            guard case .array(let alternatives) = object["security"] else { return true }
            return alternatives.isEmpty || alternatives.contains(.object([:]))
        }
        var label: String { "\(method) \(path)" }
        /// The names of the security schemes its alternatives use.
        var securitySchemes: Set<String> {
            Set((object["security"].flatMap(\.items) ?? []).flatMap { $0.members.map { Array($0.keys) } ?? [] })
        }
    }

    /// A declared parameter: `in` is path, query, header or cookie.
    struct Parameter: Sendable, Hashable {
        var name: String
        var location: String
        var required: Bool
    }

    static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    let root: JSONValue

    init(parsing text: String) throws {
        root = try JSONValue(parsing: text)
        guard root.members != nil else { throw TestFailure("the OpenAPI document is not a JSON object") }
    }

    var operations: [Operation] {
        let paths = root["paths"].flatMap(\.members) ?? [:]
        return paths.keys.sorted().flatMap { path in
            let item = paths[path]?.members ?? [:]
            return Self.methods.compactMap { method in
                item[method].flatMap(\.members).map { Operation(method: method.uppercased(), path: path, object: $0) }
            }
        }
    }

    var version: String? { root["openapi"].flatMap(\.string) }
    var title: String? { root["info"]?["title"].flatMap(\.string) }
    var infoVersion: String? { root["info"]?["version"].flatMap(\.string) }
    var securitySchemeNames: Set<String> { Set(root["components"]?["securitySchemes"].flatMap(\.members).map { Array($0.keys) } ?? []) }

    /// The operation's parameters, those of its path item included, references resolved.
    func parameters(_ operation: Operation) -> [Parameter] {
        let shared = root["paths"]?[operation.path]?["parameters"].flatMap(\.items) ?? []
        let own = operation.object["parameters"].flatMap(\.items) ?? []
        return (shared + own).compactMap { dereferenced($0) }.compactMap { parameter in
            guard let name = parameter["name"].flatMap(\.string), let location = parameter["in"].flatMap(\.string) else { return nil }
            return Parameter(name: name, location: location, required: parameter["required"] == .bool(true))
        }
    }

    /// Every `$ref` in the document, wherever it is.
    var references: [String] {
        func collect(_ value: JSONValue, into refs: inout [String]) {
            switch value {
            case .object(let members):
                if case .string(let ref) = members["$ref"] { refs.append(ref) }
                for member in members.values { collect(member, into: &refs) }
            case .array(let items):
                for item in items { collect(item, into: &refs) }
            default: break
            }
        }
        var refs: [String] = []
        collect(root, into: &refs)
        return refs
    }

    /// The target of a local reference (`#/components/schemas/User`, JSON Pointer escapes included); nil when it
    /// is not local or points at nothing.
    func resolve(_ ref: String) -> JSONValue? {
        guard ref.hasPrefix("#/") else { return nil }
        var node = root
        for token in ref.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            guard let next = node[key] else { return nil }
            node = next
        }
        return node
    }

    /// Follows `$ref`s until a schema (or response, …) that is not one.
    func dereferenced(_ value: JSONValue) -> JSONValue? {
        var node = value
        for _ in 0..<32 {
            guard case .string(let ref) = node["$ref"] else { return node }
            guard let target = resolve(ref) else { return nil }
            node = target
        }
        return nil
    }

    /// The JSON schema of an operation's answer with `status`, if the document gives one.
    func responseSchema(_ operation: Operation, status: Int) -> JSONValue? {
        guard let response = operation.responses[String(status)].flatMap(dereferenced) else { return nil }
        return response["content"]?["application/json"]?["schema"]
    }

    /// The properties of an object schema, `allOf` parts merged.
    func objectSchema(_ schema: JSONValue) -> (properties: [String: JSONValue], required: Set<String>, additional: JSONValue?) {
        guard let schema = dereferenced(schema) else { return ([:], [], nil) }
        var properties = schema["properties"].flatMap(\.members) ?? [:]
        var required = Set((schema["required"].flatMap(\.items) ?? []).compactMap(\.string))
        var additional = schema["additionalProperties"]
        for part in schema["allOf"].flatMap(\.items) ?? [] {
            let merged = objectSchema(part)
            properties.merge(merged.properties) { first, _ in first }
            required.formUnion(merged.required)
            additional = additional ?? merged.additional
        }
        return (properties, required, additional)
    }

    /// Where `value` departs from `schema`, as readable lines (empty: it conforms). Stricter than JSON Schema in one
    /// way, on purpose: an object member the schema does not list is reported unless `additionalProperties` allows
    /// it, so a field the API sends but the document leaves out is caught.
    func violations(of value: JSONValue, against schema: JSONValue, at path: String = "$") -> [String] {
        guard let schema = dereferenced(schema) else { return ["\(path): unresolvable schema \(schema.jsonString)"] }
        if value == .null {
            let nullable = schema["nullable"] == .bool(true)
            return nullable ? [] : ["\(path): null, but the schema is not nullable"]
        }
        var problems: [String] = []
        if let parts = schema["allOf"].flatMap(\.items) {
            // Object parts are checked together below (members listed by one part are not extra in another).
            for part in parts {
                if objectSchema(part).properties.isEmpty {
                    problems += violations(of: value, against: part, at: path)
                } else if value.members == nil {
                    problems.append("\(path): \(value.jsonString) is not an object")
                }
            }
        }
        if let alternatives = schema["anyOf"].flatMap(\.items) {
            // An open enum is open for the apps that read it (a later server may add values); this server sends only
            // the values it lists, so the check holds it to those.
            let candidates = Self.isOpenEnum(alternatives) ? [alternatives[0]] : alternatives
            let outcomes = candidates.map { violations(of: value, against: $0, at: path) }
            if !outcomes.contains(where: \.isEmpty) {
                problems.append("\(path): \(value.jsonString) matches no alternative of anyOf: \(outcomes.flatMap { $0 })")
            }
        }
        if let alternatives = schema["oneOf"].flatMap(\.items) {
            let matching = alternatives.filter { violations(of: value, against: $0, at: path).isEmpty }.count
            if matching != 1 { problems.append("\(path): \(value.jsonString) matches \(matching) alternatives of oneOf, not one") }
        }
        if let allowed = schema["enum"].flatMap(\.items), !allowed.contains(value) {
            problems.append("\(path): \(value.jsonString) is not one of \(JSONValue.array(allowed).jsonString)")
        }
        if let type = schema["type"]?.string, !Self.matches(value, type: type) {
            return problems + ["\(path): \(value.jsonString) is not of type \(type)"]
        }
        switch value {
        case .string(let text):
            problems += stringViolations(text, schema, at: path)
        case .int, .double:
            let number: Double =
                if case .int(let int) = value { Double(int) } else if case .double(let double) = value { double } else { 0 }
            if let minimum = schema["minimum"]?.number, number < minimum { problems.append("\(path): \(number) < minimum \(minimum)") }
            if let maximum = schema["maximum"]?.number, number > maximum { problems.append("\(path): \(number) > maximum \(maximum)") }
        case .array(let items):
            if let maxItems = schema["maxItems"]?.number, Double(items.count) > maxItems {
                problems.append("\(path): \(items.count) items, more than \(maxItems)")
            }
            if let itemSchema = schema["items"] {
                for (index, item) in items.enumerated() { problems += violations(of: item, against: itemSchema, at: "\(path)[\(index)]") }
            }
        case .object(let members):
            let object = objectSchema(schema)
            for name in object.required.sorted() where members[name] == nil {
                problems.append("\(path): required member '\(name)' is missing")
            }
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                if let memberSchema = object.properties[name] {
                    problems += violations(of: member, against: memberSchema, at: "\(path).\(name)")
                } else if let additional = object.additional, additional.members != nil {
                    problems += violations(of: member, against: additional, at: "\(path).\(name)")
                } else if object.additional != .bool(true), !(object.properties.isEmpty && object.additional == nil) {
                    problems.append("\(path): member '\(name)' is not in the document")
                }
            }
        default:
            break
        }
        return problems
    }

    /// `anyOf: [{type: string, enum: [...]}, {type: string}]`: the known values, and any other a later server adds.
    static func isOpenEnum(_ alternatives: [JSONValue]) -> Bool {
        alternatives.count == 2 && alternatives[0]["enum"] != nil && alternatives[1] == .object(["type": .string("string")])
    }

    /// The enums (of more than one value: one value is a constant) in the schemas of every operation's answers
    /// (`responses: true`) or requests, references followed, as `(where, open)`.
    func enums(inResponses responses: Bool) -> [(location: String, open: Bool)] {
        var found: [(location: String, open: Bool)] = []
        var visited: Set<String> = []
        func walk(_ node: JSONValue, _ location: String) {
            switch node {
            case .object(let members):
                if case .string(let ref) = members["$ref"] {
                    if visited.insert(ref).inserted, let target = resolve(ref) { walk(target, ref) }
                    return
                }
                if let alternatives = members["anyOf"].flatMap(\.items), Self.isOpenEnum(alternatives) {
                    found.append((location, true))
                    return
                }
                if let values = members["enum"].flatMap(\.items), values.count > 1 { found.append((location, false)) }
                for (key, member) in members where key != "example" && key != "examples" { walk(member, "\(location)/\(key)") }
            case .array(let items):
                for (index, item) in items.enumerated() { walk(item, "\(location)/\(index)") }
            default:
                break
            }
        }
        for operation in operations {
            if responses {
                for (status, response) in operation.responses {
                    if let content = dereferenced(response)?["content"] { walk(content, "\(operation.label) \(status)") }
                }
            } else {
                if let body = operation.object["requestBody"].flatMap(dereferenced) { walk(body, "\(operation.label) body") }
                for parameter in (operation.object["parameters"].flatMap(\.items) ?? []).compactMap(dereferenced) {
                    walk(parameter, "\(operation.label) parameter")
                }
            }
        }
        return found
    }

    private func stringViolations(_ text: String, _ schema: JSONValue, at path: String) -> [String] {
        var problems: [String] = []
        let length = text.unicodeScalars.count
        if let minLength = schema["minLength"]?.number, Double(length) < minLength { problems.append("\(path): shorter than \(minLength)") }
        if let maxLength = schema["maxLength"]?.number, Double(length) > maxLength { problems.append("\(path): longer than \(maxLength)") }
        if let pattern = schema["pattern"]?.string {
            if let regex = try? Regex(pattern) {
                if text.firstMatch(of: regex) == nil { problems.append("\(path): '\(text)' does not match \(pattern)") }
            } else {
                problems.append("\(path): the pattern \(pattern) does not compile")
            }
        }
        switch schema["format"]?.string {
        case "date-time":
            if (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) == nil {
                problems.append("\(path): '\(text)' is not an ISO 8601 date-time with milliseconds")
            }
        case "uuid":
            if UUID(uuidString: text) == nil { problems.append("\(path): '\(text)' is not a UUID") }
        default:
            break
        }
        return problems
    }

    private static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("integer", .int),
            ("number", .int), ("number", .double):
            true
        case ("integer", .double(let number)):
            number == number.rounded()
        default:
            false
        }
    }
}

extension JSONValue {
    fileprivate var members: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    fileprivate var items: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    fileprivate var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    fileprivate var number: Double? {
        switch self {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }
}
