import Foundation
import JSON

extension JSONSchema {
    /// Every way `value` fails the schema, in a stable order (object members by name), so API errors
    /// and tests do not flicker. Empty means valid.
    public func validate(_ value: JSONValue) -> [SchemaViolation] {
        var violations: [SchemaViolation] = []
        validate(value, at: "", into: &violations)
        return violations
    }

    private func validate(_ value: JSONValue, at path: String, into violations: inout [SchemaViolation]) {
        func fail(_ message: String) { violations.append(SchemaViolation(path: path, message: message)) }

        if let types, !types.contains(where: { Self.value(value, hasType: $0) }) {
            // Other keywords would only repeat the same complaint in other words.
            fail("expected \(types.map(\.rawValue).joined(separator: " or ")), got \(value.typeName)")
            return
        }
        if let enumValues, !enumValues.contains(where: { $0.jsonEquals(value) }) {
            fail("must be one of \(enumValues.map(\.jsonString).joined(separator: ", ")); got \(value.jsonString)")
        }
        if let constValue, !constValue.jsonEquals(value) {
            fail("must be \(constValue.jsonString); got \(value.jsonString)")
        }
        if let oneOf {
            let matches = oneOf.count(where: { $0.validate(value).isEmpty })
            if matches != 1 {
                fail(matches == 0 ? "matches none of the oneOf schemas" : "matches \(matches) of the oneOf schemas, not exactly one")
            }
        }
        switch value {
        case .int, .double:
            validateNumber(value, fail: fail)
        case .string(let text):
            validateString(text, fail: fail)
        case .array(let elements):
            if let minItems, elements.count < minItems { fail("must have at least \(minItems) items, got \(elements.count)") }
            if let maxItems, elements.count > maxItems { fail("must have at most \(maxItems) items, got \(elements.count)") }
            if case .schema(let itemSchema) = items {
                for (index, element) in elements.enumerated() {
                    itemSchema.validate(element, at: path + "/\(index)", into: &violations)
                }
            }
        case .object(let members):
            for name in required where members[name] == nil {
                violations.append(SchemaViolation(path: path + "/" + Self.escape(name), message: "is required"))
            }
            for name in members.keys.sorted() {
                guard let member = members[name] else { continue }
                let memberPath = path + "/" + Self.escape(name)
                if let propertySchema = properties[name] {
                    propertySchema.validate(member, at: memberPath, into: &violations)
                } else {
                    switch additionalProperties {
                    case .allowed: break
                    case .forbidden:
                        let allowed = properties.keys.sorted().joined(separator: ", ")
                        violations.append(
                            SchemaViolation(
                                path: memberPath,
                                message: "is not an allowed property" + (allowed.isEmpty ? "" : " (allowed: \(allowed))")))
                    case .schema(.schema(let extra)):
                        extra.validate(member, at: memberPath, into: &violations)
                    }
                }
            }
        case .null, .bool:
            break
        }
    }

    private func validateNumber(_ value: JSONValue, fail: (String) -> Void) {
        guard let number = value.numberValue else { return }
        let text = Self.render(number)
        if let minimum, number < minimum { fail("must be >= \(Self.render(minimum)), got \(text)") }
        if let maximum, number > maximum { fail("must be <= \(Self.render(maximum)), got \(text)") }
        if let exclusiveMinimum, number <= exclusiveMinimum { fail("must be > \(Self.render(exclusiveMinimum)), got \(text)") }
        if let exclusiveMaximum, number >= exclusiveMaximum { fail("must be < \(Self.render(exclusiveMaximum)), got \(text)") }
    }

    private func validateString(_ text: String, fail: (String) -> Void) {
        // JSON Schema counts code points, not UTF-16 units or grapheme clusters.
        let length = text.unicodeScalars.count
        if let minLength, length < minLength { fail("must be at least \(minLength) characters long, got \(length)") }
        if let maxLength, length > maxLength { fail("must be at most \(maxLength) characters long, got \(length)") }
        if let pattern, !pattern.matches(text) { fail("does not match the pattern '\(pattern.source)'") }
        if let format, !format.accepts(text) { fail("is not a valid \(format.rawValue)") }
    }

    private static func value(_ value: JSONValue, hasType type: JSONType) -> Bool {
        switch (type, value) {
        case (.string, .string), (.boolean, .bool), (.object, .object), (.array, .array), (.null, .null): true
        case (.integer, .int), (.number, .int), (.number, .double): true
        // 1.0 is an integer in JSON Schema (draft 6 on).
        case (.integer, .double(let number)): number.isFinite && number == number.rounded()
        default: false
        }
    }

    private static func render(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}
