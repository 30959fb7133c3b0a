import Redis

/// The dead set's bounds as the delivery scripts take them: retention of a buried record, the set's cap and its
/// entries' longest age.
struct DeadSetBounds {
    var retentionMs: Int64
    var cap: Int
    var maxAgeMs: Int64

    var arguments: [String] { [String(retentionMs), String(cap), String(maxAgeMs)] }
}

/// `reserve.lua`: a non-blocking read and start. Replies 10 fields per started job (`ReservedJob`).
struct ReserveCall: ScriptCall {
    static var script: RedisScript { Scripts.reserve }
    let keys: [String]
    let arguments: [String]

    /// `idle`: the caller has nothing in flight (it may be given a job to run isolated).
    init(_ queue: QueueKeys, consumer: String, count: Int, dead: DeadSetBounds, idle: Bool) {
        keys = [queue.stream, queue.dead, queue.stats]
        arguments = [queue.base, QueueKeys.group, consumer, String(count)] + dead.arguments + [idle ? "1" : "0"]
    }
}

/// `start.lua`: starts entries a blocking read delivered. Replies as `ReserveCall`.
struct StartCall: ScriptCall {
    static var script: RedisScript { Scripts.start }
    let keys: [String]
    private(set) var arguments: [String]
    private let leading: Int

    /// `mode`: `idle` (nothing in flight), `busy`, or `handBack` (a job to run isolated was just given: hand all back).
    enum Mode: String {
        case idle = "1"
        case busy = "0"
        case handBack = "x"
    }

    init(_ queue: QueueKeys, consumer: String, dead: DeadSetBounds, mode: Mode) {
        keys = [queue.stream, queue.dead, queue.stats]
        arguments = [queue.base, QueueKeys.group, consumer] + dead.arguments + [mode.rawValue]
        leading = arguments.count
    }

    var isEmpty: Bool { arguments.count == leading }

    /// 6 values per entry; `carried` is the job an entry carries (kind, payload, max, vis), empty when it only names one.
    mutating func add(entry: String, id: String, carried fields: [String: RedisValue]) {
        arguments += [entry, id] + [JobField.kind, .payload, .maxAttempts, .visibilityMs].map { fields[$0.rawValue]?.string ?? "" }
    }
}

/// `finish.lua`: a batch of outcomes of one queue.
struct FinishCall: ScriptCall {
    static var script: RedisScript { Scripts.finish }
    let keys: [String]
    private(set) var arguments: [String]

    init(_ queue: QueueKeys, deadSetCap: Int, deadSetMaxAgeMs: Int64, count: Int) {
        keys = [queue.stream, queue.retry, queue.dead, queue.stats]
        arguments = [queue.base, QueueKeys.group, String(deadSetCap), String(deadSetMaxAgeMs)]
        arguments.reserveCapacity(4 + count * 6)
    }

    /// 6 values per outcome: id, entry, outcome, text (result or error), ms (retention, delay or first wait), and
    /// `p` for a job whose record its start wrote whole (``ReservedJob/plainRecord``).
    mutating func add(_ outcome: JobOutcome) {
        arguments += [
            outcome.job.id.rawValue, outcome.job.entry, outcome.kind.rawValue, outcome.text, String(outcome.milliseconds),
            outcome.job.plainRecord ? "p" : "",
        ]
    }
}

/// `lane-pass.lua`: a fair job of a rate-limited kind took its provider token and leaves its shard's window.
struct LanePassCall: ScriptCall {
    static var script: RedisScript { Scripts.lanePass }
    let keys: [String]
    let arguments: [String]

    init(_ queue: QueueKeys, id: JobID) {
        keys = [queue.stream]
        arguments = [queue.base, id.rawValue]
    }
}
