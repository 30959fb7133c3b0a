/// The Redis keys of the operator tools, outside any queue's hash tag (they are read and written key by key or in
/// pipelines, never by a script that also touches a queue):
/// `prefix:processes` (zset: process id → its last beat in ms), `prefix:process:<id>` (hash: the process, with a
/// time to live of two beats), `prefix:process:<id>:work` (hash: job id → `<kind> <queue> <started ms>`, same time to live),
/// `prefix:process:<id>:signals` (list of signals the process reads at its next look: `quiet`, `stop`,
/// `cancel <job id>`), `prefix:paused` (set of paused queue names), `prefix:history:<minute>` (hash per minute,
/// `<minute>` its start in Unix seconds: fields `<kind>|ok`, `<kind>|fail`, `<kind>|ms`, kept 25 h).
public struct OperationsKeys: Sendable, Hashable {
    public let prefix: String

    public init(prefix: String) { self.prefix = prefix }

    public var processes: String { prefix + ":processes" }
    public func process(_ id: String) -> String { prefix + ":process:" + id }
    public func work(_ id: String) -> String { prefix + ":process:" + id + ":work" }
    public func signals(_ id: String) -> String { prefix + ":process:" + id + ":signals" }
    public var paused: String { prefix + ":paused" }
    public func history(minute: Int64) -> String { prefix + ":history:" + String(minute) }
}

extension JobQueue {
    /// The keys of the process registry, pausing and history under this queue's prefix.
    public var operationsKeys: OperationsKeys { OperationsKeys(prefix: options.prefix) }
}
