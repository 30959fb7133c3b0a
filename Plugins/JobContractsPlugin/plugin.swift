import Foundation
import PackagePlugin

/// Generates the `JobContracts` target's types from the job kinds' files, `jobs/*.yml` at the package root, as
/// swift-openapi-generator does from `openapi.yaml`: `<Kind>Contract.swift` from each file's `payload:` and
/// `result:` schemas, and `Contracts.all`. Each file is an input of its command, so editing it regenerates the contract.
///
/// SwiftPM asks a plugin for its commands when it plans a build, which it does again when a target's source files or
/// the manifest change, not when a file of `jobs/` alone does. Adding a kind adds its handler to `Sources/Workers`, so
/// the plan is made again; after removing or renaming a job file the build stops with "missing inputs: jobs/…": `touch
/// Package.swift` (or a clean build) plans it again.
@main
struct JobContractsPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let tool = try context.tool(named: "JobCodegen").url
        let files = try jobFiles(in: context.package.directoryURL.appending(path: "jobs"))
        let output = context.pluginWorkDirectoryURL
        var commands = files.map { file in
            let contract = output.appending(path: typeName(file.deletingPathExtension().lastPathComponent) + "Contract.swift")
            return Command.buildCommand(
                displayName: "Generating \(contract.lastPathComponent) from jobs/\(file.lastPathComponent)", executable: tool,
                arguments: ["contract", file.path, contract.path], inputFiles: [file], outputFiles: [contract])
        }
        let list = output.appending(path: "Contracts+All.swift")
        commands.append(
            .buildCommand(
                displayName: "Listing the job contracts", executable: tool, arguments: ["contract-list", list.path] + files.map(\.path),
                inputFiles: files, outputFiles: [list]))
        return commands
    }
}

/// The job kinds' files, as `JobCatalog.load` finds them: `*.yml` and `*.yaml`, not hidden, in name order.
func jobFiles(in directory: URL) throws -> [URL] {
    try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        .filter { ["yml", "yaml"].contains($0.pathExtension) && !$0.lastPathComponent.hasPrefix(".") }
        .sorted { $0.lastPathComponent < $1.lastPathComponent }
}

/// `login-webhook` → `LoginWebhook` (as JobCodegen names the contract).
func typeName(_ kind: String) -> String {
    kind.split(whereSeparator: { $0 == "-" || $0 == "_" }).map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
}
