import Foundation
import JSON
import Yams

/// Reads a composed YAML tree with the file name at hand, so that every complaint carries the
/// file, line and column of the node at fault.
struct YAMLReader {
    let file: String

    /// Composes `text` into nodes. Booleans are YAML 1.2's (`true`/`false` only): with YAML 1.1's
    /// rules an enum value `no` or `on` would silently become a boolean.
    func compose(_ text: String) throws(ConfigError) -> Node? {
        do {
            let bool = try Resolver.Rule(.bool, "^(?:true|True|TRUE|false|False|FALSE)$")
            let resolver = Resolver.basic.appending(bool).appending(.int).appending(.float).appending(.null)
            return try Yams.compose(yaml: text, resolver)
        } catch let error as YamlError {
            throw convert(error)
        } catch {
            throw ConfigError(file: file, reason: "cannot read YAML: \(error)")
        }
    }

    private func convert(_ error: YamlError) -> ConfigError {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let detail = context.map { " (\($0.text))" } ?? ""
            return ConfigError(
                file: file, line: mark.line, column: mark.column, reason: "invalid YAML: \(problem)\(detail)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            return ConfigError(
                file: file, line: context.mark.line, column: context.mark.column,
                reason: "duplicate key \(duplicates.map { "'\($0)'" }.joined(separator: ", ")) in a mapping")
        case .reader(let problem, _, _, _):
            return ConfigError(file: file, reason: "invalid YAML: \(problem)")
        default:
            return ConfigError(file: file, reason: "invalid YAML: \(error)")
        }
    }

    func error(_ node: Node?, _ path: String, _ message: String) -> ConfigError {
        ConfigError(
            file: file, line: node?.mark?.line, column: node?.mark?.column,
            reason: path.isEmpty ? message : "\(path): \(message)")
    }

    // MARK: Mappings

    struct Entry {
        var key: String
        var keyNode: Node
        var value: Node
    }

    /// The entries of a mapping, after checking that every key is one of `allowed`.
    func mapping(_ node: Node, _ path: String, allowed: [String]) throws(ConfigError) -> [String: Entry] {
        guard case .mapping(let mapping) = node else {
            throw error(node, path, "expected a mapping of \(allowed.joined(separator: ", ")), got \(describe(node))")
        }
        var entries: [String: Entry] = [:]
        for (keyNode, value) in mapping {
            guard case .scalar(let scalar) = keyNode else {
                throw error(keyNode, path, "keys must be plain names")
            }
            let key = scalar.string
            guard allowed.contains(key) else {
                let hint = Self.closest(to: key, in: allowed).map { "; did you mean '\($0)'?" } ?? ""
                throw error(keyNode, path, "unknown key '\(key)'\(hint) (allowed: \(allowed.joined(separator: ", ")))")
            }
            entries[key] = Entry(key: key, keyNode: keyNode, value: value)
        }
        return entries
    }

    // MARK: Scalars

    func describe(_ node: Node) -> String {
        switch node {
        case .scalar(let scalar):
            switch scalar.kind {
            case .null: return "null"
            case .bool, .int, .float: return "'\(scalar.string)'"
            default: return "'\(scalar.string)'"
            }
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        }
    }

    /// A string-valued scalar (names, cron expressions); numbers are taken as their text.
    func string(_ node: Node, _ path: String, expected: String) throws(ConfigError) -> String {
        guard case .scalar(let scalar) = node, scalar.kind != .null, scalar.kind != .bool else {
            throw error(node, path, "expected \(expected), got \(describe(node))")
        }
        return scalar.string
    }

    func int(_ node: Node, _ path: String, expected: String) throws(ConfigError) -> Int {
        guard case .scalar(let scalar) = node, scalar.kind == .int, let value = node.int else {
            throw error(node, path, "expected \(expected), got \(describe(node))")
        }
        return value
    }

    /// `true` or `false` (YAML 1.2's core booleans; `yes`/`no` are strings there, and refused).
    func bool(_ node: Node, _ path: String) throws(ConfigError) -> Bool {
        guard case .scalar(let scalar) = node, scalar.kind == .bool, let value = node.bool else {
            throw error(node, path, "expected true or false, got \(describe(node))")
        }
        return value
    }

    func number(_ node: Node, _ path: String, expected: String) throws(ConfigError) -> Double {
        if case .scalar(let scalar) = node, scalar.kind == .int || scalar.kind == .float,
            let value = node.float, value.isFinite
        {
            return value
        }
        throw error(node, path, "expected \(expected), got \(describe(node))")
    }

    /// A positive duration (`500ms`, `30s`, `5m`, `1h`, `2d`).
    func duration(_ node: Node, _ path: String, minimum: Duration = .milliseconds(1)) throws(ConfigError) -> Duration {
        let expected = "expected a duration such as 500ms, 30s, 5m, 1h, 2d"
        guard case .scalar(let scalar) = node, scalar.kind != .null else {
            throw error(node, path, "\(expected); got \(describe(node))")
        }
        guard let duration = Duration(parsing: scalar.string) else {
            let bare = scalar.kind == .int || scalar.kind == .float ? " (a bare number has no unit)" : ""
            throw error(node, path, "\(expected); got '\(scalar.string)'\(bare)")
        }
        guard duration >= minimum else {
            let least =
                minimum == .milliseconds(1) ? "greater than zero" : minimum == .zero ? "zero or more" : "at least \(minimum.configText)"
            throw error(node, path, "must be \(least), got '\(scalar.string)'")
        }
        return duration
    }

    // MARK: JSON

    /// Where the nodes of a converted subtree were, by JSON pointer.
    struct Marks {
        /// The position of each value.
        var values: [String: Mark] = [:]
        /// The position of each mapping key (for errors about the key itself, such as an unknown keyword).
        var keys: [String: Mark] = [:]

        /// The position of `pointer`, or of its nearest recorded ancestor (a missing required property
        /// is reported at its object).
        func mark(for pointer: String, key: Bool = false) -> Mark? {
            if key, let mark = keys[pointer] { return mark }
            var current = pointer
            while true {
                if let mark = values[current] { return mark }
                guard let slash = current.lastIndex(of: "/") else { return nil }
                current = String(current[..<slash])
            }
        }
    }

    /// Converts a YAML subtree to JSON, recording each node's position by JSON pointer so that schema
    /// errors and violations can be reported at the right line.
    func json(_ node: Node, _ path: String, pointer: String = "", marks: inout Marks) throws(ConfigError)
        -> JSONValue
    {
        if let mark = node.mark { marks.values[pointer] = mark }
        switch node {
        case .scalar(let scalar):
            switch scalar.kind {
            case .null: return .null
            case .bool: return .bool(node.bool ?? false)
            case .int:
                if let value = node.int { return .int(value) }
                throw error(node, path + pointer, "integer '\(scalar.string)' is out of range")
            case .float:
                guard let value = node.float, value.isFinite else {
                    throw error(node, path + pointer, "'\(scalar.string)' is not a finite number")
                }
                return .double(value)
            default: return .string(scalar.string)
            }
        case .sequence(let sequence):
            var items: [JSONValue] = []
            for (index, item) in sequence.enumerated() {
                items.append(try json(item, path, pointer: pointer + "/\(index)", marks: &marks))
            }
            return .array(items)
        case .mapping(let mapping):
            var members: [String: JSONValue] = [:]
            for (keyNode, value) in mapping {
                guard case .scalar(let key) = keyNode else { throw error(keyNode, path + pointer, "keys must be strings") }
                let memberPointer = pointer + "/" + JSONSchema.escape(key.string)
                if let mark = keyNode.mark { marks.keys[memberPointer] = mark }
                members[key.string] = try json(value, path, pointer: memberPointer, marks: &marks)
            }
            return .object(members)
        case .alias:
            throw error(node, path + pointer, "aliases are not supported")
        }
    }

    /// The allowed key nearest to a misspelt one, when it is close enough to be a typo.
    static func closest(to key: String, in allowed: [String]) -> String? {
        let scored = allowed.map { ($0, distance(key.lowercased(), $0)) }.min { $0.1 < $1.1 }
        guard let (best, score) = scored, score <= max(2, best.count / 3) else { return nil }
        return best
    }

    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

extension Node.Scalar {
    /// The scalar's tag after resolution (null, bool, int, float or str for plain scalars). Reading
    /// `Node.tag` is what runs the resolver; `Tag.name` itself is internal to Yams.
    var kind: Tag.Name { Tag.Name(rawValue: Node.scalar(self).tag.rawValue) }
}
