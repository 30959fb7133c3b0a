import JSON

/// Values a schema accepts, made from the schema alone, so a test can go through every kind of `jobs/` without
/// naming one: `all` sets every declared member, `required` only the required ones (and nullable ones, as `null`).
/// A string takes the schema's first `examples` value when it has one (a `pattern` cannot be sampled), else its
/// first `enum` value or one of its `format`.
enum SchemaSamples {
    enum Members { case all, required }

    /// One value per `oneOf` branch, or the one value of a schema without.
    static func values(_ schema: JSONValue, members: Members) -> [JSONValue] {
        if case .array(let branches)? = schema["oneOf"] {
            return branches.flatMap { values($0, members: members) }
        }
        return [value(schema, members: members)]
    }

    static func value(_ schema: JSONValue, members: Members) -> JSONValue {
        if case .array(let examples)? = schema["examples"], let first = examples.first { return first }
        if let constant = schema["const"] { return constant }
        if case .array(let values)? = schema["enum"], let first = values.first { return first }
        if case .array(let branches)? = schema["oneOf"], let first = branches.first { return value(first, members: members) }
        let types = typeNames(schema["type"])
        if members == .required && types.contains("null") { return .null }
        switch types.first(where: { $0 != "null" }) {
        case "string": return .string(string(schema))
        case "integer": return .int(Int(schema["minimum"].flatMap(\.numberValue)?.rounded(.up) ?? 1))
        case "number": return .double(schema["minimum"].flatMap(\.numberValue) ?? 1.5)
        case "boolean": return .bool(true)
        case "array":
            let count = max(1, schema["minItems"].flatMap(\.numberValue).map { Int($0) } ?? 1)
            return .array(Array(repeating: value(schema["items"] ?? [:], members: members), count: count))
        case "object":
            guard case .object(let properties)? = schema["properties"] else { return [:] }
            let required = Set(strings(schema["required"]))
            var object: [String: JSONValue] = [:]
            for (name, property) in properties
            where members == .all || required.contains(name) || typeNames(property["type"]).contains("null") {
                object[name] = value(property, members: members)
            }
            return .object(object)
        default:
            // No type: any JSON.
            return ["any": [1, "json", nil]]
        }
    }

    private static func string(_ schema: JSONValue) -> String {
        switch strings(schema["format"]).first {
        case "uuid": return "0b7c6a8e-3f2d-4c1b-9a5e-7d6f8e9a0b1c"
        case "date-time": return "2026-03-08T07:00:00Z"
        case "date": return "2026-03-08"
        case "email": return "ann@example.com"
        default:
            let length = schema["minLength"].flatMap(\.numberValue).map { Int($0) } ?? 1
            return String(repeating: "a", count: max(1, length))
        }
    }

    private static func typeNames(_ type: JSONValue?) -> [String] { strings(type) }

    /// A string, or the strings of an array.
    private static func strings(_ value: JSONValue?) -> [String] {
        switch value {
        case .string(let text)?: return [text]
        case .array(let values)?:
            return values.compactMap {
                guard case .string(let text) = $0 else { return nil }
                return text
            }
        default: return []
        }
    }
}
