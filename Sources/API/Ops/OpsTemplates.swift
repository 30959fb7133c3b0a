import Mustache

/// The dashboard's templates (`Templates/*.mustache`, embedded in the binary), parsed once. Partials are found by
/// file name without extension (`{{>layout-top}}`). Values are HTML-escaped unless a template asks otherwise with
/// triple braces, which only the server-drawn chart uses.
enum OpsTemplates {
    static let library: MustacheLibrary = {
        let files: [String: [UInt8]] = [
            "layout-top": PackageResources.layout_top_mustache, "layout-bottom": PackageResources.layout_bottom_mustache,
            "login": PackageResources.login_mustache, "overview": PackageResources.overview_mustache,
            "queue-table": PackageResources.queue_table_mustache, "queues": PackageResources.queues_mustache,
            "jobs": PackageResources.jobs_mustache, "job": PackageResources.job_mustache, "cron": PackageResources.cron_mustache,
            "message": PackageResources.message_mustache, "processes": PackageResources.processes_mustache,
        ]
        var library = MustacheLibrary()
        for (name, bytes) in files {
            do {
                try library.register(String(decoding: bytes, as: UTF8.self), named: name)
            } catch {
                preconditionFailure("dashboard template \(name).mustache does not parse: \(error)")
            }
        }
        return library
    }()

    static func render(_ name: String, _ context: [String: Any]) -> String {
        library.render(context, withTemplate: name) ?? "template \(name) is missing"
    }

    static let stylesheet = PackageResources.ops_css
    static let script = PackageResources.ops_js
}
