import Foundation
import Redis

/// The live processes (`carbscan work`, and `carbscan schedule`), each registered by its `ProcessBeacon`, and the
/// signals operators send them. A process that dies without leaving (SIGKILL) drops out when its hash's time to live
/// of two beats runs out: readers skip and forget members whose hash is gone.
public struct ProcessRegistry: Sendable {
    let redis: RedisClient
    public let keys: OperationsKeys

    public init(queue: JobQueue) {
        self.redis = queue.redis
        self.keys = queue.operationsKeys
    }

    /// Every live process, oldest first, with its busy jobs. Forgets the members whose hash expired.
    public func processes() async throws -> [ProcessRecord] {
        let ids = try await redis.send(["ZRANGE", keys.processes, "0", "-1"]).array?.compactMap(\.string) ?? []
        guard !ids.isEmpty else { return [] }
        let replies = try await redis.pipeline(ids.flatMap { [["HGETALL", keys.process($0)], ["HGETALL", keys.work($0)]] })
        var records: [ProcessRecord] = []
        var gone: [String] = []
        for (index, id) in ids.enumerated() {
            let fields = replies[index * 2].fields?.compactMapValues(\.string) ?? [:]
            let work = replies[index * 2 + 1].fields?.compactMapValues(\.string) ?? [:]
            guard let record = ProcessRecord(id: id, fields: fields, work: work) else {
                gone.append(id)
                continue
            }
            records.append(record)
        }
        if !gone.isEmpty { _ = try? await redis.send(["ZREM", keys.processes] + gone) }
        return records.sorted { ($0.startedAt, $0.id) < ($1.startedAt, $1.id) }
    }

    /// The id of the live process `idOrPrefix` names: its whole id, or a prefix only one live process's id has.
    public func resolve(_ idOrPrefix: String) async throws -> String {
        let live = try await processes().map(\.id)
        if live.contains(idOrPrefix) { return idOrPrefix }
        let matches = live.filter { $0.hasPrefix(idOrPrefix) }
        guard !idOrPrefix.isEmpty, let first = matches.first else {
            throw QueueError(.notFound, "no live process '\(idOrPrefix)' (carbscan processes lists them)")
        }
        guard matches.count == 1 else {
            throw QueueError(.ambiguous, "'\(idOrPrefix)' names \(matches.count) processes: \(matches.joined(separator: ", "))")
        }
        return first
    }

    /// Sends `signal` to the live process `idOrPrefix` names (see `resolve(_:)`); it acts on it within about a
    /// second. Returns the process's whole id.
    @discardableResult
    public func signal(_ signal: ProcessSignal, to idOrPrefix: String) async throws -> String {
        let id = try await resolve(idOrPrefix)
        try await send(signal, toExactly: id)
        return id
    }

    /// Appends the signal to the process's list, which lives a minute (a process that died never reads it).
    func send(_ signal: ProcessSignal, toExactly id: String) async throws {
        let replies = try await redis.pipeline([
            ["RPUSH", keys.signals(id), signal.wire], ["PEXPIRE", keys.signals(id), "60000"],
        ])
        for case .error(let message) in replies { throw RedisError(.server, "signal failed: \(message)") }
    }
}

/// The fields of a process's hash (`prefix:process:<id>`), as its beacon writes them.
enum ProcessField: String, CaseIterable {
    case kind, host, pid, version, queues, concurrency, busy, done, failed, state
    case startedMs = "started"
    case beatMs = "beat"
}

extension ProcessRecord {
    init?(id: String, fields: [String: String], work: [String: String]) {
        func field(_ f: ProcessField) -> String? { fields[f.rawValue] }
        func date(_ f: ProcessField) -> Date? { field(f).flatMap(Double.init).map { Date(timeIntervalSince1970: $0 / 1000) } }
        guard let kind = field(.kind).flatMap(ProcessKind.init(rawValue:)), let started = date(.startedMs),
            let beat = date(.beatMs)
        else { return nil }
        self.id = id
        self.kind = kind
        self.host = field(.host) ?? ""
        self.pid = field(.pid).flatMap(Int.init) ?? 0
        self.version = field(.version) ?? ""
        self.queues = field(.queues).flatMap { try? JSONDecoder().decode([ServedQueue].self, from: Data($0.utf8)) } ?? []
        self.concurrency = field(.concurrency).flatMap(Int.init) ?? 0
        self.busy = field(.busy).flatMap(Int.init) ?? 0
        self.done = field(.done).flatMap(Int.init) ?? 0
        self.failed = field(.failed).flatMap(Int.init) ?? 0
        self.startedAt = started
        self.lastBeatAt = beat
        self.state = field(.state).flatMap(ProcessState.init(rawValue:)) ?? .running
        self.jobs = work.compactMap { id, text in
            // `<kind> <queue> <started ms>`: names of kinds and queues hold no space.
            let parts = text.split(separator: " ")
            guard let jobID = JobID(rawValue: id), parts.count == 3, let ms = Double(parts[2]) else { return nil }
            return BusyJob(
                id: jobID, kind: String(parts[0]), queue: String(parts[1]), startedAt: Date(timeIntervalSince1970: ms / 1000))
        }.sorted { ($0.startedAt, $0.id.rawValue) < ($1.startedAt, $1.id.rawValue) }
    }
}
