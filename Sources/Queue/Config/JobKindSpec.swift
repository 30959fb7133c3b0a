/// Everything the queue engine, workers and scheduler need to know about one job kind, as declared in
/// `jobs/<name>.yml`, so operators can tune a kind without recompiling.
public struct JobKindSpec: Sendable, Equatable {
    /// The kind's name: the file name without `.yml` (`[a-z0-9][a-z0-9-]*`).
    public var name: String
    /// The queue (Redis stream) the kind's jobs go to (`[a-z0-9_-]+`); workers subscribe per queue.
    public var queue: String
    /// At most this many jobs of the queue run at once in one worker process (`queue_limit:`; a worker's
    /// `--queues name=N` overrides it). Kinds sharing a queue that set it must agree. nil: only the worker's
    /// concurrency bounds the queue.
    public var queueLimit: Int?
    /// At most this many jobs of the queue run at once across every worker process that serves it (`global_limit:`):
    /// permits leased in Redis (``GlobalLimits``), next to each process's `queueLimit`. Kinds sharing a queue that set
    /// it must agree. nil: no limit across processes.
    public var globalLimit: Int?
    /// How many shards the queue is split into (`shards:`, 1 to ``maximumShards``; default 1). Each shard is a queue
    /// of its own in Redis (`{queue#0}` … `{queue#N-1}`, one hash tag each), so a Redis Cluster spreads them over its
    /// nodes. Kinds sharing a queue that set it must agree.
    public var shards: Int?
    /// 1...100, higher runs first within a worker's queues.
    public var priority: Int
    /// How long a handler may run before the attempt is failed.
    public var timeout: Duration
    /// The lease: a job whose worker stops heartbeating for this long is re-delivered. At least 3s so
    /// that a heartbeat can renew it in time.
    public var visibilityTimeout: Duration
    /// Attempts before the job goes to the dead set (1 = no retries).
    public var maxAttempts: Int
    public var backoff: Backoff
    /// Deduplication of concurrent enqueues; nil when every enqueue is a new job.
    public var uniqueness: Uniqueness?
    public var retention: Retention
    public var schedules: [CronSchedule]
    /// The provider budget the kind's handler draws from before each outbound call; nil for no limit.
    public var rateLimit: RateLimit?
    /// Checked at enqueue, so a bad payload is a 4xx for the client, not a dead job later.
    public var payloadSchema: JSONSchema
    /// What the kind's handler returns (`result:`), the shape of the generated contract's `Result`; nil when the kind
    /// declares none. Not checked at run time: the contract's types write it.
    public var resultSchema: JSONSchema?
    /// Whether the kind's jobs keep an event log for the clients that follow them (`events: true`): their state changes,
    /// and the `delta` and `progress` events their handler publishes (``JobEvents``), on a capped stream beside the
    /// job's record that lives ``eventsLifetime``. Off: no cost per job.
    public var events: Bool
    /// A job not started within this time of its enqueue is not run (`start_by:`): it ends `expired`, and what it
    /// reserved is given back (a question whose asker has left). nil: it waits as long as it takes.
    public var startBy: Duration?
    /// Fair lanes per user (`fair:`): see ``Fairness``. nil: first in, first out.
    public var fairness: Fairness?
    /// The file the spec was loaded from (empty for specs built in code).
    public var file: String

    public static let defaultQueue = "default"
    public static let maximumQueueLimit = 100_000
    public static let maximumShards = 64
    public static let defaultPriority = 1
    public static let defaultTimeout: Duration = .seconds(30)
    public static let defaultVisibilityTimeout: Duration = .seconds(30)
    public static let minimumVisibilityTimeout: Duration = .seconds(3)
    public static let defaultMaxAttempts = 5
    public static let defaultBackoff = Backoff.exponential(base: .seconds(1), max: .seconds(600), jitter: 0.2)

    public init(
        name: String,
        queue: String = defaultQueue,
        queueLimit: Int? = nil,
        globalLimit: Int? = nil,
        shards: Int? = nil,
        priority: Int = defaultPriority,
        timeout: Duration = defaultTimeout,
        visibilityTimeout: Duration = defaultVisibilityTimeout,
        maxAttempts: Int = defaultMaxAttempts,
        backoff: Backoff = defaultBackoff,
        uniqueness: Uniqueness? = nil,
        retention: Retention = .default,
        schedules: [CronSchedule] = [],
        rateLimit: RateLimit? = nil,
        payloadSchema: JSONSchema = .anyObject,
        resultSchema: JSONSchema? = nil,
        events: Bool = false,
        startBy: Duration? = nil,
        fairness: Fairness? = nil,
        file: String = ""
    ) {
        self.name = name
        self.queue = queue
        self.queueLimit = queueLimit
        self.globalLimit = globalLimit
        self.shards = shards
        self.priority = priority
        self.timeout = timeout
        self.visibilityTimeout = visibilityTimeout
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.uniqueness = uniqueness
        self.retention = retention
        self.schedules = schedules
        self.rateLimit = rateLimit
        self.payloadSchema = payloadSchema
        self.resultSchema = resultSchema
        self.events = events
        self.startBy = startBy
        self.fairness = fairness
        self.file = file
    }

    /// How long a job's event log is kept after its last event: the kind's retention of a succeeded job, at least 10
    /// minutes (a client that reconnects finds its events), nil for kinds without `events: true`.
    public var eventsLifetime: Duration? {
        events ? max(retention.succeeded, .seconds(600)) : nil
    }

    /// Whether `text` is a valid kind name.
    public static func isValidName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, isLowerAlphanumeric(first) else { return false }
        return text.unicodeScalars.allSatisfy { isLowerAlphanumeric($0) || $0 == "-" }
    }

    /// Whether `text` is a valid queue or schedule name (`[a-z0-9_-]+`).
    public static func isValidQueueName(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy { isLowerAlphanumeric($0) || $0 == "-" || $0 == "_" }
    }

    private static func isLowerAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar)
    }
}
