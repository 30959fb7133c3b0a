/// How many jobs of each queue one worker process may run at once: the `queue_limit:` of the queue's job files,
/// overridden by the worker's own `--queues name=N`, all within its concurrency.
public struct QueueLimits: Sendable, Equatable {
    /// Limits by queue; a served queue not here is bound by the concurrency alone.
    public var byQueue: [String: Int]

    /// The limits for the `served` queues: the files' first, then `overrides` (a worker's command line) over them.
    public init(served: [String], catalog: JobCatalog, overrides: [String: Int] = [:]) {
        let fromFiles = catalog.queueLimits.filter { served.contains($0.key) }
        byQueue = fromFiles.merging(overrides.filter { served.contains($0.key) }) { _, override in override }
    }

    /// A setting the worker cannot honour, said at start-up and at each reload.
    public struct Warning: Sendable, CustomStringConvertible {
        public var message: String
        public var details: [(String, String)]

        public var description: String { message + " (" + details.map { "\($0)=\($1)" }.joined(separator: ", ") + ")" }
    }

    /// What these limits promise that the process cannot keep: a queue limit above the concurrency (the concurrency
    /// bounds it), and more jobs of Postgres-bound kinds (``JobKind/holdsDatabaseConnection``) at once than the pool
    /// has connections (the rest wait for one, inside their timeouts).
    public func warnings(
        served: [String], concurrency: Int, databasePool: Int, catalog: JobCatalog, databaseBoundKinds: Set<String>
    ) -> [Warning] {
        var warnings: [Warning] = []
        for (queue, limit) in byQueue.sorted(by: { $0.key < $1.key }) where limit > concurrency {
            warnings.append(
                Warning(
                    message: "a queue's limit is above --concurrency, which bounds it",
                    details: [("queue", queue), ("limit", "\(limit)"), ("concurrency", "\(concurrency)")]))
        }
        let boundQueues = served.filter { queue in
            catalog.kinds.values.contains { $0.queue == queue && databaseBoundKinds.contains($0.name) }
        }
        let demand = min(concurrency, boundQueues.reduce(0) { $0 + min(byQueue[$1] ?? concurrency, concurrency) })
        if demand > databasePool {
            warnings.append(
                Warning(
                    message:
                        "more jobs that hold a Postgres connection may run at once than the pool has connections: the rest wait for one; limit their queues (queue_limit in jobs/, or --queues name=N) or raise --database-pool",
                    details: [
                        ("queues", boundQueues.sorted().joined(separator: ",")), ("at_once", "\(demand)"),
                        ("database_pool", "\(databasePool)"),
                    ]))
        }
        return warnings
    }
}
