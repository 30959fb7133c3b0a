import Foundation

/// Writes a contract's declarations as Swift source, in the style of the hand-written contracts they replaced:
/// `package` types, memberwise initialisers with `nil` defaults for optional members, and coding code that writes
/// exactly the JSON the schema describes.
struct ContractWriter {
    var lines: [String] = []
    private var depth = 0

    mutating func line(_ text: String = "") {
        lines.append(text.isEmpty ? "" : String(repeating: "    ", count: depth) + text)
    }

    mutating func doc(_ text: String?) {
        guard let text else { return }
        for part in text.split(separator: "\n", omittingEmptySubsequences: false) {
            line("/// " + part.trimmingCharacters(in: .whitespaces))
        }
    }

    mutating func block(_ opening: String, _ body: (inout ContractWriter) -> Void) {
        line(opening + " {")
        depth += 1
        body(&self)
        depth -= 1
        line("}")
    }

    var text: String { lines.joined(separator: "\n") + "\n" }

    // MARK: Contracts

    static func contract(kind: String, file: String, description: String?, declarations: [Declaration]) -> String {
        var writer = ContractWriter()
        writer.line("// Generated from jobs/\(file) by JobCodegen (Plugins/JobContractsPlugin): edit the job file, not this one.")
        writer.line("import JSON")
        writer.line("import Queue")
        writer.line()
        writer.doc("`\(kind)` (jobs/\(file))" + (description.map { ": " + $0 } ?? "."))
        let first = ["Parameters", "Result"]
        let ordered =
            first.compactMap { name in declarations.first { $0.name == name } } + declarations.filter { !first.contains($0.name) }
        writer.block("package enum \(ContractBuilder.typeName(kind))Contract: JobContract") { writer in
            writer.line("package static let name = \"\(kind)\"")
            for declaration in ordered {
                writer.line()
                writer.declare(declaration)
            }
        }
        return writer.text
    }

    private mutating func declare(_ declaration: Declaration) {
        switch declaration {
        case .alias(let name, let doc, let type):
            self.doc(doc)
            line("package typealias \(name) = \(type)")
        case .enumeration(let name, let doc, let values):
            self.doc(doc)
            block("package enum \(name): String, Codable, Sendable, CaseIterable, JSONValueConvertible") { writer in
                for value in values {
                    let caseName = Self.caseName(value)
                    writer.line(caseName == value ? "case \(caseName)" : "case \(caseName) = \"\(value)\"")
                }
                writer.line()
                writer.line("package func jsonValue() -> JSONValue { .string(rawValue) }")
            }
        case .choice(let name, let doc, let branches):
            self.doc(doc)
            block("package enum \(name): Codable, Sendable, Equatable, JSONValueConvertible") { writer in
                for branch in branches { writer.line("case \(Self.caseName(branch))(\(branch))") }
                writer.line()
                writer.line("/// The first case, in the schema's order, whose type decodes.")
                writer.block("package init(from decoder: any Decoder) throws") { writer in
                    for branch in branches.dropLast() {
                        writer.block("if let value = try? \(branch)(from: decoder)") { writer in
                            writer.line("self = .\(Self.caseName(branch))(value)")
                            writer.line("return")
                        }
                    }
                    if let last = branches.last {
                        writer.line("self = .\(Self.caseName(last))(try \(last)(from: decoder))")
                    }
                }
                writer.line()
                writer.block("package func encode(to encoder: any Encoder) throws") { writer in
                    writer.forEachCase(branches, "try value.encode(to: encoder)")
                }
                writer.line()
                writer.block("package func jsonValue() throws -> JSONValue") { writer in
                    writer.forEachCase(branches, "try value.jsonValue()")
                }
            }
        case .structure(let name, let doc, let properties):
            self.doc(doc)
            structure(name, properties)
        }
    }

    /// `switch self` over a `oneOf` enum's cases, each running `body` on its `value`.
    private mutating func forEachCase(_ branches: [String], _ body: String) {
        line("switch self {")
        for branch in branches { line("case .\(Self.caseName(branch))(let value): \(body)") }
        line("}")
    }

    private mutating func structure(_ name: String, _ properties: [Property]) {
        block("package struct \(name): Codable, Sendable, Equatable, JSONValueConvertible") { writer in
            guard !properties.isEmpty else {
                writer.line("package init() {}")
                writer.line()
                writer.line("package func jsonValue() -> JSONValue { .object([:]) }")
                return
            }
            for property in properties {
                writer.doc(property.doc)
                writer.line("package var \(property.name): \(Self.type(property))")
            }
            writer.line()
            let parameters = properties.map { "\(Self.label($0.name)): \(Self.type($0))\($0.isOptional ? " = nil" : "")" }
            writer.block("package init(\(parameters.joined(separator: ", ")))") { writer in
                for property in properties { writer.line("self.\(Self.label(property.name)) = \(property.name)") }
            }
            writer.line()
            writer.block("enum CodingKeys: String, CodingKey") { writer in
                for property in properties {
                    writer.line(
                        Self.label(property.name) == property.key
                            ? "case \(property.name)" : "case \(property.name) = \"\(property.key)\"")
                }
            }
            writer.line()
            writer.block("package init(from decoder: any Decoder) throws") { writer in
                writer.line("let container = try decoder.container(keyedBy: CodingKeys.self)")
                for property in properties { writer.decode(property) }
            }
            writer.line()
            writer.block("package func encode(to encoder: any Encoder) throws") { writer in
                writer.line("var container = encoder.container(keyedBy: CodingKeys.self)")
                for property in properties { writer.encode(property) }
            }
            writer.line()
            writer.doc("The tree `encode(to:)` gives ``JSONValueEncoder``, built without Codable (see ``JSONValueConvertible``).")
            writer.block("package func jsonValue() throws -> JSONValue") { writer in
                writer.line("var members: [String: JSONValue] = [:]")
                writer.line("members.reserveCapacity(\(properties.count))")
                for property in properties { writer.member(property) }
                writer.line("return .object(members)")
            }
        }
    }

    /// One member into `jsonValue()`'s object, as `encode(_:)` writes it: a nil optional left out, a nil nullable `null`.
    private mutating func member(_ property: Property) {
        let value = "self.\(Self.label(property.name))"
        let target = "members[\"\(property.key)\"]"
        let convert = { (value: String) in
            if case .carried = property.shape { return ".string(\(value).description)" }
            return "try \(value).jsonValue()"
        }
        if !property.isOptional {
            line("\(target) = \(convert(value))")
        } else if property.isNullable {
            line("if let value = \(value) { \(target) = \(convert("value")) } else { \(target) = .null }")
        } else {
            line("if let value = \(value) { \(target) = \(convert("value")) }")
        }
    }

    private mutating func decode(_ property: Property) {
        let target = "self.\(Self.label(property.name))"
        let key = ".\(property.name)"
        let method = property.isOptional ? "decodeIfPresent" : "decode"
        guard case .carried(let type) = property.shape else {
            line("\(target) = try container.\(method)(\(property.shape.swift).self, forKey: \(key))")
            return
        }
        let text = Self.label(property.name) + "Text"
        let convert = { (writer: inout ContractWriter) in
            writer.block("guard let value = \(type)(\(text)) else") { writer in
                writer.line("throw DecodingError.dataCorruptedError(")
                writer.line("    forKey: \(key), in: container, debugDescription: \"'\\(\(text))' is not a valid \(type)\")")
            }
            writer.line("\(target) = value")
        }
        if property.isOptional {
            line("if let \(text) = try container.decodeIfPresent(String.self, forKey: \(key)) {")
            depth += 1
            convert(&self)
            depth -= 1
            line("} else {")
            line("    \(target) = nil")
            line("}")
        } else {
            line("let \(text) = try container.decode(String.self, forKey: \(key))")
            convert(&self)
        }
    }

    private mutating func encode(_ property: Property) {
        var value = "self.\(Self.label(property.name))"
        if case .carried = property.shape {
            value = property.isOptional ? "\(value)?.description" : "\(value).description"
        }
        let method = property.isOptional && !property.isNullable ? "encodeIfPresent" : "encode"
        line("try container.\(method)(\(value), forKey: .\(property.name))")
    }

    private static func type(_ property: Property) -> String {
        property.isOptional ? property.shape.swift + "?" : property.shape.swift
    }

    /// A member's name without the backticks that a keyword needs where it is declared.
    private static func label(_ name: String) -> String {
        name.replacingOccurrences(of: "`", with: "")
    }

    /// `reconciliation` → `reconciliation`, `State` → `state`, `dead-letter` → `deadLetter`.
    static func caseName(_ value: String) -> String {
        var name = ContractBuilder.memberName(value)
        if let first = name.first, first.isUppercase, !name.hasPrefix("`") { name = first.lowercased() + name.dropFirst() }
        if let first = name.first, first.isNumber { name = "_" + name }
        return name
    }

    // MARK: Lists

    /// Every contract, for code and tests that go through all kinds.
    static func contractList(kinds: [String]) -> String {
        var writer = ContractWriter()
        writer.line("// Generated from the files of jobs/ by JobCodegen (Plugins/JobContractsPlugin).")
        writer.line("import Queue")
        writer.line()
        writer.block("extension Contracts") { writer in
            writer.line("/// One contract per file of `jobs/`, in the files' name order.")
            writer.block("package static var all: [any JobContract.Type]") { writer in
                writer.line("[")
                for kind in kinds { writer.line("    \(ContractBuilder.typeName(kind))Contract.self,") }
                writer.line("]")
            }
        }
        return writer.text
    }

    /// The workers' registration: each kind's handler is the type `<Kind>Job`, built from the process's services.
    static func handlerList(kinds: [String]) -> String {
        var writer = ContractWriter()
        writer.line("// Generated from the files of jobs/ by JobCodegen (Plugins/JobHandlersPlugin).")
        writer.line("import Queue")
        writer.line()
        writer.block("extension Handlers") { writer in
            writer.line("/// Registers the handler of every file of `jobs/`: `jobs/<kind>.yml`'s is the type `<Kind>Job`, with an")
            writer.line("/// `init(services:)`. A kind without one does not build. Each registration names its concrete type, so that")
            writer.line("/// `JobRegistry.register` is specialised for it (see there).")
            writer.block("static func registerEveryKind(in registry: inout JobRegistry, services: WorkerServices)") { writer in
                for kind in kinds { writer.line("registry.register(\(ContractBuilder.typeName(kind))Job(services: services))") }
            }
        }
        return writer.text
    }
}
