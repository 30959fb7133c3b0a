import Foundation
import JSON

extension JSONSchema {
    private static let keywords: Set<String> = [
        "type", "properties", "required", "additionalProperties", "enum", "const", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "format", "items",
        "minItems", "maxItems", "oneOf", "description", "title", "examples",
    ]

    init(_ schema: JSONValue, path: String) throws(SchemaError) {
        self.source = schema
        guard case .object(let members) = schema else {
            throw SchemaError(path: path, reason: "a schema must be an object, got \(schema.typeName)")
        }
        // `x-…` keys are annotations for other tools (the contract generator's `x-swift-type`), as in OpenAPI.
        for key in members.keys.sorted() where !Self.keywords.contains(key) && !key.hasPrefix("x-") {
            var error = SchemaError(
                path: path + "/" + Self.escape(key),
                reason: "unknown schema keyword '\(key)'; supported: \(Self.keywords.sorted().joined(separator: ", "))")
            error.isAboutTheKeyword = true
            throw error
        }
        func at(_ key: String) -> String { path + "/" + key }

        if let type = members["type"] {
            types = try Self.types(type, path: at("type"))
        }
        if let value = members["properties"] {
            guard case .object(let entries) = value else {
                throw SchemaError(path: at("properties"), reason: "must be an object of schemas")
            }
            for name in entries.keys.sorted() {
                if let entry = entries[name] {
                    properties[name] = try JSONSchema(entry, path: at("properties") + "/" + Self.escape(name))
                }
            }
        }
        if let value = members["required"] {
            guard case .array(let names) = value else {
                throw SchemaError(path: at("required"), reason: "must be an array of property names")
            }
            for (index, name) in names.enumerated() {
                guard case .string(let name) = name else {
                    throw SchemaError(path: at("required") + "/\(index)", reason: "must be a property name")
                }
                guard !required.contains(name) else {
                    throw SchemaError(path: at("required") + "/\(index)", reason: "'\(name)' is listed twice")
                }
                required.append(name)
            }
        }
        switch members["additionalProperties"] {
        case nil, .bool(true): additionalProperties = .allowed
        case .bool(false): additionalProperties = .forbidden
        case let value?:
            additionalProperties = .schema(.schema(try JSONSchema(value, path: at("additionalProperties"))))
        }
        if additionalProperties == .forbidden {
            for (index, name) in required.enumerated() where properties[name] == nil {
                throw SchemaError(
                    path: at("required") + "/\(index)",
                    reason: "'\(name)' is required but not under properties, and additionalProperties is false")
            }
        }
        if let value = members["enum"] {
            guard case .array(let values) = value, !values.isEmpty else {
                throw SchemaError(path: at("enum"), reason: "must be a non-empty array")
            }
            enumValues = values
        }
        constValue = members["const"]
        minimum = try Self.number(members, "minimum", path: path)
        maximum = try Self.number(members, "maximum", path: path)
        exclusiveMinimum = try Self.number(members, "exclusiveMinimum", path: path)
        exclusiveMaximum = try Self.number(members, "exclusiveMaximum", path: path)
        if let minimum, let maximum, minimum > maximum {
            throw SchemaError(path: at("maximum"), reason: "maximum is below minimum")
        }
        minLength = try Self.count(members, "minLength", path: path)
        maxLength = try Self.count(members, "maxLength", path: path)
        if let minLength, let maxLength, minLength > maxLength {
            throw SchemaError(path: at("maxLength"), reason: "maxLength is below minLength")
        }
        if let value = members["pattern"] {
            guard case .string(let text) = value else {
                throw SchemaError(path: at("pattern"), reason: "must be a regular expression string")
            }
            do {
                pattern = try CompiledPattern(text)
            } catch {
                throw SchemaError(path: at("pattern"), reason: "'\(text)' is not a valid regular expression")
            }
        }
        if let value = members["format"] {
            guard case .string(let name) = value, let known = Format(rawValue: name) else {
                throw SchemaError(
                    path: at("format"),
                    reason: "unknown format \(value.jsonString); supported: "
                        + Format.allCases.map(\.rawValue).joined(separator: ", "))
            }
            format = known
        }
        if let value = members["items"] {
            items = .schema(try JSONSchema(value, path: at("items")))
        }
        if let value = members["oneOf"] {
            guard case .array(let branches) = value, !branches.isEmpty else {
                throw SchemaError(path: at("oneOf"), reason: "must be a non-empty array of schemas")
            }
            var compiled: [JSONSchema] = []
            for (index, branch) in branches.enumerated() {
                compiled.append(try JSONSchema(branch, path: at("oneOf") + "/\(index)"))
            }
            oneOf = compiled
        }
        if let value = members["examples"], value.typeName != "array" {
            throw SchemaError(path: at("examples"), reason: "must be an array of values")
        }
        minItems = try Self.count(members, "minItems", path: path)
        maxItems = try Self.count(members, "maxItems", path: path)
        if let minItems, let maxItems, minItems > maxItems {
            throw SchemaError(path: at("maxItems"), reason: "maxItems is below minItems")
        }
        for key in ["description", "title"] {
            if let value = members[key], value.typeName != "string" {
                throw SchemaError(path: at(key), reason: "must be a string")
            }
        }
    }

    private static func types(_ value: JSONValue, path: String) throws(SchemaError) -> [JSONType] {
        let names: [JSONValue]
        switch value {
        case .string: names = [value]
        case .array(let list) where !list.isEmpty: names = list
        default: throw SchemaError(path: path, reason: "must be a type name or a non-empty array of them")
        }
        var types: [JSONType] = []
        for (index, name) in names.enumerated() {
            guard case .string(let text) = name, let type = JSONType(rawValue: text) else {
                throw SchemaError(
                    path: value.typeName == "array" ? path + "/\(index)" : path,
                    reason: "unknown type \(name.jsonString); expected one of "
                        + JSONType.allCases.map(\.rawValue).joined(separator: ", "))
            }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }

    private static func number(_ members: [String: JSONValue], _ key: String, path: String) throws(SchemaError)
        -> Double?
    {
        guard let value = members[key] else { return nil }
        guard let number = value.numberValue, number.isFinite else {
            throw SchemaError(path: path + "/" + key, reason: "must be a number, got \(value.typeName)")
        }
        return number
    }

    private static func count(_ members: [String: JSONValue], _ key: String, path: String) throws(SchemaError)
        -> Int?
    {
        guard let value = members[key] else { return nil }
        guard case .int(let count) = value, count >= 0 else {
            throw SchemaError(path: path + "/" + key, reason: "must be a non-negative integer")
        }
        return count
    }

    /// RFC 6901 escaping of one pointer segment. Runs for every member of every validated payload, so the usual
    /// name (nothing to escape) is returned as is.
    static func escape(_ segment: String) -> String {
        guard segment.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return segment }
        return segment.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}
