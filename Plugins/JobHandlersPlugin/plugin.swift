import Foundation
import PackagePlugin

/// Generates the `Workers` target's registration of every job kind's handler from the files of `jobs/` at the package
/// root: `jobs/<kind>.yml`'s handler is the type `<Kind>Job`, so a kind is one job file plus its handler.
@main
struct JobHandlersPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = context.package.directoryURL.appending(path: "jobs")
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { ["yml", "yaml"].contains($0.pathExtension) && !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let list = context.pluginWorkDirectoryURL.appending(path: "Handlers+Kinds.swift")
        return [
            .buildCommand(
                displayName: "Listing the job handlers", executable: try context.tool(named: "JobCodegen").url,
                arguments: ["handler-list", list.path] + files.map(\.path), inputFiles: files, outputFiles: [list])
        ]
    }
}
