import Foundation
import Yams

/// Generates Swift from the job kinds' files (`jobs/<kind>.yml`), for the build tool plugins:
///
///     JobCodegen contract <jobs/kind.yml> <KindContract.swift>     the kind's contract, from `payload:` and `result:`
///     JobCodegen contract-list <Contracts+All.swift> <job file>…   `Contracts.all`, every kind's contract
///     JobCodegen handler-list <Handlers+Kinds.swift> <job file>…   the workers' registration of every kind's handler
///
/// Only `payload:` and `result:` are read; the file's other keys (queues, limits, schedules…) are the loader's, which
/// checks the whole file when a process starts.
enum JobCodegen {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2 else { throw CodegenError(usage) }
        let output = URL(fileURLWithPath: arguments[1])
        let text: String
        switch arguments[0] {
        case "contract" where arguments.count == 3:
            text = try contract(file: URL(fileURLWithPath: arguments[1]))
            try write(text, to: URL(fileURLWithPath: arguments[2]))
            return
        case "contract-list":
            text = ContractWriter.contractList(kinds: kinds(arguments.dropFirst(2)))
        case "handler-list":
            text = ContractWriter.handlerList(kinds: kinds(arguments.dropFirst(2)))
        default:
            throw CodegenError(usage)
        }
        try write(text, to: output)
    }

    static let usage =
        "usage: JobCodegen contract <job file> <output> | contract-list <output> <job file>… | handler-list <output> <job file>…"

    static func contract(file: URL) throws -> String {
        let kind = file.deletingPathExtension().lastPathComponent
        let yaml = try String(contentsOf: file, encoding: .utf8)
        // YAML 1.2's booleans, as the loader reads them: an enum value `no` or `on` stays a string.
        let bool = try Resolver.Rule(.bool, "^(?:true|True|TRUE|false|False|FALSE)$")
        let resolver = Resolver.basic.appending(bool).appending(.int).appending(.float).appending(.null)
        let root = try Yams.compose(yaml: yaml, resolver)
        var builder = ContractBuilder(file: "jobs/\(file.lastPathComponent)")
        try builder.parameters(root?["payload"])
        try builder.result(root?["result"])
        return ContractWriter.contract(
            kind: kind, file: file.lastPathComponent, description: root?["payload"]?["description"]?.string,
            declarations: builder.declarations)
    }

    static func kinds(_ files: ArraySlice<String>) -> [String] {
        files.map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent }.sorted()
    }

    /// Leaves an unchanged file alone, so that what depends on it is not rebuilt.
    static func write(_ text: String, to url: URL) throws {
        if let existing = try? String(contentsOf: url, encoding: .utf8), existing == text { return }
        try text.write(to: url, atomically: true, encoding: .utf8)
    }
}

do {
    try JobCodegen.main()
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
