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
        runSettings = self.kinds.mapValues(RunSettings.init)
    }

    /// What a worker reads of each kind per job, by kind name.
    public let runSettings: [String: RunSettings]

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
        // One queue, one value of each per-queue setting: the second file (in name order) that says otherwise is the
        // one reported.
        let sorted = kinds.values.sorted { $0.file < $1.file }
        try agree(sorted, on: "queue_limit") { $0.queueLimit }
        try agree(sorted, on: "global_limit") { $0.globalLimit }
        try agree(sorted, on: "shards") { $0.shards }
        try agree(sorted, on: "fair.window") { $0.fairness?.window }
        return JobCatalog(kinds: Array(kinds.values))
    }

    private static func agree(_ specs: [JobKindSpec], on setting: String, _ value: (JobKindSpec) -> Int?) throws(ConfigError) {
        var first: [String: (value: Int, file: String)] = [:]
        for spec in specs {
            guard let mine = value(spec) else { continue }
            if let earlier = first[spec.queue], earlier.value != mine {
                throw ConfigError(
                    file: spec.file,
                    reason: "\(setting) \(mine) for queue '\(spec.queue)' disagrees with \(earlier.value) in \(earlier.file)")
            }
            first[spec.queue] = first[spec.queue] ?? (mine, spec.file)
        }
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
    public var queueLimits: [String: Int] { smallestPerQueue(\.queueLimit) }

    /// Each queue's `global_limit:` from its kinds' files (the smallest, for a catalog built in code with several).
    public var globalLimits: [String: Int] { smallestPerQueue(\.globalLimit) }

    /// Each queue's smallest value of a per-queue setting among its kinds that set it.
    private func smallestPerQueue(_ setting: KeyPath<JobKindSpec, Int?>) -> [String: Int] {
        kinds.values.reduce(into: [:]) { values, spec in
            guard let value = spec[keyPath: setting] else { return }
            values[spec.queue] = min(value, values[spec.queue] ?? value)
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
