import Foundation

/// What a process is, as the registry lists it.
public enum ProcessKind: String, Sendable, Codable, CaseIterable {
    case worker, scheduler
}

/// Where a process stands: fetching (`running`), told to take no new job (`quiet`), or on its way out (`stopping`).
public enum ProcessState: String, Sendable, Codable, CaseIterable {
    case running, quiet, stopping
}

/// A queue a worker serves, with its limit in that process (nil: bound by the concurrency alone).
public struct ServedQueue: Sendable, Codable, Equatable {
    public var name: String
    public var limit: Int?

    public init(name: String, limit: Int?) {
        self.name = name
        self.limit = limit
    }
}

/// A job running in a process now.
public struct BusyJob: Sendable, Codable, Equatable {
    public var id: JobID
    public var kind: String
    public var queue: String
    public var startedAt: Date

    public init(id: JobID, kind: String, queue: String, startedAt: Date) {
        self.id = id
        self.kind = kind
        self.queue = queue
        self.startedAt = startedAt
    }
}

/// One live process of the registry, as of its last beat (Sidekiq's Busy page shows the same).
public struct ProcessRecord: Sendable, Codable, Equatable {
    /// The registry id: for a worker its consumer name in Redis (`host:pid:suffix`).
    public var id: String
    public var kind: ProcessKind
    public var host: String
    public var pid: Int
    public var version: String
    /// Served queues with their limits (empty for a scheduler).
    public var queues: [ServedQueue]
    public var concurrency: Int
    /// Jobs running at the last beat.
    public var busy: Int
    /// Jobs that succeeded here since start.
    public var done: Int
    /// Deliveries that failed here since start (retried or dead).
    public var failed: Int
    public var startedAt: Date
    public var lastBeatAt: Date
    public var state: ProcessState
    /// The jobs running at the last beat, oldest first.
    public var jobs: [BusyJob]
}
