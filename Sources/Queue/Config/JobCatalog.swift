import Foundation
import JSON

/// All job kinds of the system, loaded from `jobs/`: the API validates payloads with it, workers read
/// timeouts and backoff from it, the scheduler reads the cron entries.
public struct JobCatalog: Sendable {
    /// Kinds by name.
    public let kinds: [String: JobKindSpec]

    /// A catalog of kinds built in code (tests, tools); a later kind with the same name replaces an
    /// earlier one.
    public init(kinds: [JobKindSpec]) {
        self.kinds = Dictionary(kinds.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Loads every `*.yml` and `*.yaml` file of `directory` (one kind per file, named after it).
    ///
    /// Refuses the whole catalog at the first invalid file, so a process never starts with half its
    /// kinds. Files are read in name order, so the error reported is the same on every machine.
    public static func load(directory: String) throws(ConfigError) -> JobCatalog {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw ConfigError(file: directory, reason: "cannot read the job kinds directory: \(error.localizedDescription)")
        }
        var kinds: [String: JobKindSpec] = [:]
        for fileName in names.sorted() where !fileName.hasPrefix(".") {
            let url = URL(fileURLWithPath: fileName)
            guard ["yml", "yaml"].contains(url.pathExtension) else { continue }
            let path = (directory as NSString).appendingPathComponent(fileName)
            let kindName = url.deletingPathExtension().lastPathComponent
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigError(file: path, reason: "cannot read the file")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw ConfigError(file: path, reason: "the file is not UTF-8 text")
            }
            let spec = try JobKindSpec(yaml: text, name: kindName, file: path)
            if let existing = kinds[kindName] {
                throw ConfigError(file: path, reason: "job kind '\(kindName)' is also defined in \(existing.file)")
            }
            kinds[kindName] = spec
        }
        // One queue, one limit: the second file (in name order) that says otherwise is the one reported.
        var limits: [String: JobKindSpec] = [:]
        for spec in kinds.values.sorted(by: { $0.file < $1.file }) {
            guard let limit = spec.queueLimit else { continue }
            if let first = limits[spec.queue], first.queueLimit != limit {
                throw ConfigError(
                    file: spec.file,
                    reason: "queue_limit \(limit) for queue '\(spec.queue)' disagrees with \(first.queueLimit!) in \(first.file)")
            }
            limits[spec.queue] = limits[spec.queue] ?? spec
        }
        var shards: [String: JobKindSpec] = [:]
        for spec in kinds.values.sorted(by: { $0.file < $1.file }) {
            guard let count = spec.shards else { continue }
            if let first = shards[spec.queue], first.shards != count {
                throw ConfigError(
                    file: spec.file, reason: "shards \(count) for queue '\(spec.queue)' disagrees with \(first.shards!) in \(first.file)")
            }
            shards[spec.queue] = shards[spec.queue] ?? spec
        }
        var windows: [String: JobKindSpec] = [:]
        for spec in kinds.values.sorted(by: { $0.file < $1.file }) {
            guard let window = spec.fairness?.window else { continue }
            if let first = windows[spec.queue], first.fairness?.window != window {
                throw ConfigError(
                    file: spec.file,
                    reason: "fair.window \(window) for queue '\(spec.queue)' disagrees with \(first.fairness!.window) in \(first.file)")
            }
            windows[spec.queue] = windows[spec.queue] ?? spec
        }
        return JobCatalog(kinds: Array(kinds.values))
    }

    /// The kind named `kind`, if the catalog has it.
    public subscript(kind: String) -> JobKindSpec? { kinds[kind] }

    /// Every queue some kind uses, sorted: what a worker that serves "all queues" listens on.
    public var queues: [String] { Set(kinds.values.map(\.queue)).sorted() }

    /// How many shards `queue` is split into (`shards:` in its kinds' files; the largest, for a catalog built in code
    /// with several), 1 when none says.
    public func shardCount(of queue: String) -> Int {
        kinds.values.filter { $0.queue == queue }.compactMap(\.shards).max() ?? 1
    }

    /// Each queue's `queue_limit:` from its kinds' files (the smallest, for a catalog built in code with several).
    public var queueLimits: [String: Int] {
        kinds.values.reduce(into: [:]) { limits, spec in
            guard let limit = spec.queueLimit else { return }
            limits[spec.queue] = min(limit, limits[spec.queue] ?? limit)
        }
    }

    /// Checks a payload before it is enqueued; an unknown kind is a violation, not a crash.
    public func validatePayload(kind: String, payload: JSONValue) -> [SchemaViolation] {
        guard let spec = kinds[kind] else {
            return [SchemaViolation(path: "", message: "unknown job kind '\(kind)'")]
        }
        return spec.payloadSchema.validate(payload)
    }
}
