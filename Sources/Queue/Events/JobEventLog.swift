import Redis

/// One entry of a job's event log: a state change the queue's scripts wrote (`state`, with its `status` and `attempt`),
/// or what its handler published (`delta` with its `text`, `progress` with its `step`).
public struct JobEvent: Sendable, Equatable {
    /// The entry's stream id (`<ms>-<seq>`): the event's id for `Last-Event-ID`.
    public var id: String
    public var type: String
    public var fields: [String: String]

    /// The state a `state` event names.
    public var status: JobStatus? { type == "state" ? fields["status"].flatMap(JobStatus.init(rawValue:)) : nil }
}

/// A job's event log: a stream on the job's hash tag (beside its record, so a cluster keeps both on one node), capped
/// at about 1,000 entries and expiring ``JobKindSpec/eventsLifetime`` after its last one. The scripts append its state
/// changes (`logState` in helpers.lua); ``append(_:_:of:queue:lifetime:)`` appends what a handler publishes. Every append
/// is announced on the queue's completion channel (`<id> <type>`), which wakes the API's followers of the job.
public struct JobEventLog: Sendable {
    public static let cap = 1000

    let redis: RedisClient
    let prefix: String

    public init(redis: RedisClient, prefix: String) {
        self.redis = redis
        self.prefix = prefix
    }

    /// Appends one event in one round-trip (the entry, its lifetime, the wake-up).
    public func append(_ type: String, _ fields: [(String, String)], of id: JobID, queue: String, lifetime: Duration) async throws {
        let keys = QueueKeys(prefix: prefix, queue: queue)
        let log = keys.jobEvents(id)
        var entry = ["XADD", log, "MAXLEN", "~", String(Self.cap), "*", "type", type]
        for (name, value) in fields { entry += [name, value] }
        let replies = try await redis.pipeline([
            entry, ["PEXPIRE", log, String(lifetime.milliseconds)], ["SPUBLISH", keys.events, "\(id.rawValue) \(type)"],
        ])
        for case .error(let message) in replies { throw RedisError(.server, "event log append failed: \(message)") }
    }

    /// Up to `count` events after `after` (an event id; nil from the start), oldest first.
    public func events(of id: JobID, queue: String, after: String?, count: Int = 100) async throws -> [JobEvent] {
        let log = QueueKeys(prefix: prefix, queue: queue).jobEvents(id)
        let start = after.map { "(" + $0 } ?? "-"
        return Self.decode(try await redis.send(["XRANGE", log, start, "+", "COUNT", String(count)]))
    }

    private static func decode(_ reply: RedisValue) -> [JobEvent] {
        (reply.array ?? []).compactMap { entry in
            guard let parts = entry.array, parts.count == 2, let id = parts[0].string, let fields = parts[1].fields,
                let type = fields["type"]?.string
            else { return nil }
            return JobEvent(id: id, type: type, fields: fields.compactMapValues(\.string).filter { $0.key != "type" })
        }
    }

    /// Notes that a client follows the job (for an hour): ``JobEvents/hasFollowers()`` answers true from then on.
    public func markFollowed(_ id: JobID, queue: String) async throws {
        _ = try await redis.send(["SET", QueueKeys(prefix: prefix, queue: queue).jobFollowed(id), "1", "PX", "3600000"])
    }

    /// Whether a client follows (or followed) the job.
    public func isFollowed(_ id: JobID, queue: String) async throws -> Bool {
        try await redis.send(["EXISTS", QueueKeys(prefix: prefix, queue: queue).jobFollowed(id)]).int == 1
    }

    /// The log's newest event; nil when the job has no log (a kind without `events: true` has none; a log expires).
    public func lastEvent(of id: JobID, queue: String) async throws -> JobEvent? {
        let log = QueueKeys(prefix: prefix, queue: queue).jobEvents(id)
        return Self.decode(try await redis.send(["XREVRANGE", log, "+", "-", "COUNT", "1"])).first
    }

    /// Whether event `id` comes after event `other` (both as ``isEventID(_:)`` accepts them).
    public static func isEvent(_ id: String, after other: String) -> Bool {
        func parts(_ text: String) -> (UInt64, UInt64) {
            let split = text.split(separator: "-")
            return (split.first.flatMap { UInt64($0) } ?? 0, split.count > 1 ? UInt64(split[1]) ?? 0 : 0)
        }
        let (a, b) = (parts(id), parts(other))
        return a.0 != b.0 ? a.0 > b.0 : a.1 > b.1
    }

    /// Whether `text` is an event id as this log writes them (`<ms>-<seq>`), or its time alone (`<ms>`, as Redis reads
    /// it: `0` is before every event), so a client's `Last-Event-ID` can be used.
    public static func isEventID(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count)
            && parts.allSatisfy { $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) && UInt64($0) != nil }
    }
}
