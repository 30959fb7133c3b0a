import Foundation
import JSON

/// A job kind's uniqueness rule: while a job with the same key is pending (up to `ttl`), enqueuing
/// another is a no-op that returns the existing job.
public struct Uniqueness: Sendable, Equatable {
    /// The key with `${field}` placeholders for top-level payload fields, e.g. `push:${token}`.
    public let keyTemplate: String
    /// How long the key blocks duplicates.
    public var ttl: Duration
    /// The template split once (every enqueue of the kind builds a key from it); nil when it does not parse.
    private let parts: [Part]?

    public init(keyTemplate: String, ttl: Duration) {
        self.keyTemplate = keyTemplate
        self.ttl = ttl
        parts = try? Self.parse(keyTemplate)
    }

    /// The key for `payload`: each `${field}` replaced by the payload's top-level field, strings as
    /// they are, numbers and booleans as their JSON text.
    ///
    /// Returns nil when a referenced field is missing, null, an object or an array: such a payload has
    /// no meaningful key, and a key with a hole in it would merge unrelated jobs.
    public func key(for payload: JSONValue) -> String? {
        guard let parts else { return nil }
        var key = ""
        for part in parts {
            switch part {
            case .literal(let text): key += text
            case .field(let name):
                switch payload[name] {
                case .string(let value): key += value
                case .int(let value): key += String(value)
                case .bool(let value): key += value ? "true" : "false"
                case .double(let value) where value.isFinite:
                    key += value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
                default: return nil
                }
            }
        }
        return key
    }

    /// The payload fields the template refers to, in order; the loader checks they are declared.
    public var referencedFields: [String] {
        (parts ?? []).compactMap {
            if case .field(let name) = $0 { name } else { nil }
        }
    }

    enum Part: Equatable {
        case literal(String)
        case field(String)
    }

    struct TemplateError: Error {
        var reason: String
    }

    /// Splits a template into literal text and `${name}` fields; an unclosed or empty `${}` is an error.
    static func parse(_ template: String) throws(TemplateError) -> [Part] {
        var parts: [Part] = []
        var rest = Substring(template)
        while let open = rest.range(of: "${") {
            if open.lowerBound > rest.startIndex { parts.append(.literal(String(rest[..<open.lowerBound]))) }
            let afterOpen = rest[open.upperBound...]
            guard let close = afterOpen.firstIndex(of: "}") else {
                throw TemplateError(reason: "unclosed '${' in key template '\(template)'")
            }
            let name = String(afterOpen[..<close])
            guard !name.isEmpty, !name.contains("$"), !name.contains("{") else {
                throw TemplateError(reason: "bad field name '${\(name)}' in key template '\(template)'")
            }
            parts.append(.field(name))
            rest = afterOpen[afterOpen.index(after: close)...]
        }
        if !rest.isEmpty { parts.append(.literal(String(rest))) }
        return parts
    }
}
