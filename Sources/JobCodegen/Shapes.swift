import Yams

/// A Swift type a schema turns into, as written in a declaration.
indirect enum Shape: Equatable {
    /// A type spelled as is: `String`, `Int`, `JSONValue`, a generated type, or an `x-swift-type`.
    case plain(String)
    /// A value the wire carries as a string of its text (`x-swift-type` on a `type: string` schema, e.g. an `Int64` id
    /// kept as a decimal string): converted by the coding code, and nowhere else.
    case carried(String)
    case array(Shape)

    var swift: String {
        switch self {
        case .plain(let name), .carried(let name): name
        case .array(let element): "[\(element.swift)]"
        }
    }
}

/// One member of a generated struct.
struct Property: Equatable {
    var key: String
    var name: String
    var shape: Shape
    /// Not required, or nullable: the Swift type is optional.
    var isOptional: Bool
    /// `type: [..., "null"]`: written as `null` when nil, never left out.
    var isNullable: Bool
    var doc: String?
}

/// A type declared inside a contract.
enum Declaration: Equatable {
    case structure(name: String, doc: String?, properties: [Property])
    case enumeration(name: String, doc: String?, values: [String])
    /// `oneOf`: the first branch, in the schema's order, that decodes.
    case choice(name: String, doc: String?, branches: [String])
    case alias(name: String, doc: String?, type: String)

    /// The declaration without its doc comments: two schemas that differ only in their descriptions declare one type.
    var undocumented: Declaration {
        switch self {
        case .structure(let name, _, let properties):
            .structure(
                name: name, doc: nil,
                properties: properties.map {
                    var property = $0
                    property.doc = nil
                    return property
                })
        case .enumeration(let name, _, let values): .enumeration(name: name, doc: nil, values: values)
        case .choice(let name, _, let branches): .choice(name: name, doc: nil, branches: branches)
        case .alias(let name, _, let type): .alias(name: name, doc: nil, type: type)
        }
    }

    var name: String {
        switch self {
        case .structure(let name, _, _), .enumeration(let name, _, _), .choice(let name, _, _), .alias(let name, _, _): name
        }
    }
}

struct CodegenError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Turns the payload and result schemas of one job file into the declarations of its contract.
///
/// The rules, so that a file's reader knows the Swift it gets: `string`, `integer`, `number`, `boolean` are `String`,
/// `Int`, `Double`, `Bool`; an `array` is an array of its `items`; an `object` with `properties` is a struct and a
/// string `enum` an enum, named by `title` or else by the property (`usage` → `Usage`); `oneOf` of titled objects is
/// an enum with a case per branch; a schema without `type` is any JSON (`JSONValue`). A member is optional when it is
/// not `required` or is nullable (`type: [string, "null"]`); a nullable member is written as `null`, another optional
/// one left out. `x-swift-name` names a member in Swift, `x-swift-type` gives a member's Swift type (carried as its
/// text when the schema's type is `string`; else it must be `JSONValueConvertible`, for the generated `jsonValue()`).
/// Keys the generator does not know are left to the job file's loader.
struct ContractBuilder {
    private(set) var declarations: [Declaration] = []
    let file: String

    init(file: String) { self.file = file }

    /// The payload: always a struct named `Parameters`.
    mutating func parameters(_ node: Node?) throws {
        guard let node else {
            declare(.structure(name: "Parameters", doc: nil, properties: []))
            return
        }
        let shape = try shape(node, path: "payload", name: "Parameters", forceName: true)
        guard shape == .plain("Parameters") else {
            throw CodegenError("\(file): payload: must be an object schema with properties (or none)")
        }
    }

    /// The result: `Result` is the type the schema gives, or `Never` when the file declares none (the handler
    /// returns nothing).
    mutating func result(_ node: Node?) throws {
        guard let node else {
            declare(.alias(name: "Result", doc: "The kind declares no result: its handler returns nil.", type: "Never"))
            return
        }
        let shape = try shape(node, path: "result", name: "Result", forceName: true)
        if shape != .plain("Result") {
            declare(.alias(name: "Result", doc: Self.string(node, "description"), type: shape.swift))
        }
    }

    private mutating func shape(_ node: Node, path: String, name: String, forceName: Bool = false) throws -> Shape {
        guard node.mapping != nil else { throw CodegenError("\(file): \(path): a schema must be a mapping") }
        let typeName = forceName ? name : (Self.string(node, "title") ?? name)
        let doc = Self.string(node, "description")
        let types = try Self.types(node, path: "\(file): \(path)")
        let nonNull = types.filter { $0 != "null" }

        if let swiftType = Self.string(node, "x-swift-type") {
            return nonNull == ["string"] && swiftType != "String" ? .carried(swiftType) : .plain(swiftType)
        }
        if let branches = node["oneOf"]?.sequence {
            var names: [String] = []
            for (index, branch) in branches.enumerated() {
                guard let title = Self.string(branch, "title") else {
                    throw CodegenError("\(file): \(path).oneOf[\(index)]: a branch needs a title (its type's name)")
                }
                let shape = try shape(branch, path: "\(path).oneOf[\(index)]", name: title)
                guard case .plain(let branchName) = shape, declarations.contains(where: { $0.name == branchName }) else {
                    throw CodegenError("\(file): \(path).oneOf[\(index)]: a branch must be an object schema with properties")
                }
                names.append(branchName)
            }
            try add(.choice(name: typeName, doc: doc, branches: names), path: path)
            return .plain(typeName)
        }
        guard nonNull.count <= 1 else {
            throw CodegenError("\(file): \(path): one type (and null) per schema, got \(types.joined(separator: ", "))")
        }
        switch nonNull.first {
        case nil:
            return .plain("JSONValue")
        case "string":
            if let values = node["enum"]?.sequence {
                let names = values.compactMap(\.string)
                guard names.count == values.count, !names.isEmpty else {
                    throw CodegenError("\(file): \(path).enum: the values of a string enum must be strings")
                }
                try add(.enumeration(name: typeName, doc: doc, values: names), path: path)
                return .plain(typeName)
            }
            return .plain("String")
        case "integer": return .plain("Int")
        case "number": return .plain("Double")
        case "boolean": return .plain("Bool")
        case "array":
            guard let items = node["items"] else { return .array(.plain("JSONValue")) }
            let element = try shape(items, path: "\(path).items", name: Self.typeName(name) + "Item")
            if case .carried = element {
                throw CodegenError("\(file): \(path).items: x-swift-type on a string is for members, not array items")
            }
            return .array(element)
        case "object":
            guard let properties = node["properties"]?.mapping else {
                return forceName
                    ? try add(.structure(name: typeName, doc: doc, properties: []), path: path)
                    : .plain("[String: JSONValue]")
            }
            let required = Set((node["required"]?.sequence ?? []).compactMap(\.string))
            var members: [Property] = []
            for (keyNode, value) in properties {
                guard let key = keyNode.string else { throw CodegenError("\(file): \(path).properties: keys must be strings") }
                let memberTypes = try Self.types(value, path: "\(file): \(path).properties.\(key)")
                let nullable = memberTypes.contains("null")
                let member = try shape(value, path: "\(path).properties.\(key)", name: Self.typeName(key))
                members.append(
                    Property(
                        key: key, name: Self.string(value, "x-swift-name") ?? Self.memberName(key), shape: member,
                        isOptional: nullable || !required.contains(key), isNullable: nullable, doc: Self.string(value, "description")))
            }
            return try add(.structure(name: typeName, doc: doc, properties: members), path: path)
        case let other?:
            throw CodegenError("\(file): \(path): unknown type '\(other)'")
        }
    }

    /// Declares a type once: a second schema with the same name must say the same (e.g. one `Scope` for the payload's
    /// and the result's `scope`).
    @discardableResult
    private mutating func add(_ declaration: Declaration, path: String) throws -> Shape {
        if let existing = declarations.first(where: { $0.name == declaration.name }) {
            guard existing.undocumented == declaration.undocumented else {
                throw CodegenError(
                    "\(file): \(path): a second, different type named '\(declaration.name)'; give one a `title` of its own")
            }
        } else {
            declarations.append(declaration)
        }
        return .plain(declaration.name)
    }

    private mutating func declare(_ declaration: Declaration) {
        declarations.append(declaration)
    }

    private static func string(_ node: Node, _ key: String) -> String? {
        node[key]?.string
    }

    private static func types(_ node: Node, path: String) throws -> [String] {
        guard let type = node["type"] else { return [] }
        if let name = type.string { return [name] }
        guard let names = type.sequence?.compactMap(\.string), !names.isEmpty else {
            throw CodegenError("\(path).type: must be a type name or a list of them")
        }
        return names
    }

    /// `login-webhook` → `LoginWebhook`, `usage` → `Usage`.
    static func typeName(_ name: String) -> String {
        words(name).map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    /// `provider_uid` → `providerUid` (`x-swift-name` says otherwise), `daily` → `daily`.
    static func memberName(_ name: String) -> String {
        let parts = words(name)
        guard let first = parts.first else { return name }
        let camel = first + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        return keywords.contains(camel) ? "`\(camel)`" : camel
    }

    private static func words(_ name: String) -> [String] {
        name.split(whereSeparator: { $0 == "-" || $0 == "_" || $0 == " " || $0 == "." }).map(String.init)
    }

    private static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "func", "import", "init", "inout", "let", "operator",
        "protocol", "static", "struct", "subscript", "typealias", "var", "break", "case", "continue", "default", "defer", "do",
        "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "switch", "where", "while", "as", "catch",
        "false", "is", "nil", "rethrows", "super", "self", "Self", "throw", "throws", "true", "try", "Type", "Protocol",
    ]
}
