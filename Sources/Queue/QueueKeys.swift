/// The Redis keys of one queue. All share the `{queue}` hash tag, so a queue lives on one Redis Cluster node
/// and every script touching it is single-slot.
public struct QueueKeys: Sendable, Hashable {
    public let queue: String
    /// `prefix:{queue}:`
    public let base: String

    public init(prefix: String, queue: String) {
        self.queue = queue
        self.base = "\(prefix):{\(queue)}:"
    }

    public var stream: String { base + "stream" }
    public var scheduled: String { base + "scheduled" }
    public var retry: String { base + "retry" }
    public var dead: String { base + "dead" }
    public var stats: String { base + "stats" }
    public var cron: String { base + "cron" }
    /// Pub/sub channel: `<job id> <status>` when a job succeeds, fails or will be retried.
    public var events: String { base + "events" }
    /// The running jobs an operator cancelled (`cancel.lua`), until they end: `finish.lua` reads a plain record only
    /// if its id is here.
    public var cancelling: String { base + "cancelling" }
    /// How many jobs wait in the queue's fair lanes (`lanes.lua`).
    public var lanesWaiting: String { base + "lanes:waiting" }
    /// The fair jobs past their lanes, on the stream or held by a worker (`lanes.lua`).
    public var lanesHeld: String { base + "lanes:held" }
    /// The permits of the queue's limit across processes, by holder (`global-limit.lua`, on the queue's own keys even
    /// when it is sharded).
    public var limitHeld: String { base + "limit:held" }
    /// When each holder's permits lapse unless renewed, in ms (`global-limit.lua`).
    public var limitLeases: String { base + "limit:leases" }
    public func job(_ id: JobID) -> String { base + "job:" + id.rawValue }
    /// The job's events for its followers (`GET /jobs/{id}/events`): a capped stream beside its record.
    public func jobEvents(_ id: JobID) -> String { base + "job:" + id.rawValue + ":ev" }
    /// Set (for an hour) while a client follows the job's event stream: a handler that can stream its output (a chat)
    /// does so only then, or when its producer asked for it.
    public func jobFollowed(_ id: JobID) -> String { base + "job:" + id.rawValue + ":fl" }
    /// Set (for an hour) once a request of the job's owner was answered with its end: the API's short wait, a long
    /// poll, or the event stream. A push about the job is sent only while it is not set.
    public func resultSeen(_ id: JobID) -> String { base + "job:" + id.rawValue + ":seen" }

    /// The consumer group every worker of the queue reads through.
    public static let group = "workers"
}
