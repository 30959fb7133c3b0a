import Redis

/// `retry-now.lua`: runs a dead job, a retry or a delayed job now. Replies where it was (`scheduled`, `retry`,
/// `dead`), or nil.
struct RetryNowCall: ScriptCall {
    static var script: RedisScript { Scripts.retryNow }
    let keys: [String]
    let arguments: [String]

    init(_ queue: QueueKeys, id: String) {
        keys = [queue.stream, queue.scheduled, queue.retry, queue.dead]
        arguments = [queue.base, id]
    }
}

/// `discard.lua`: deletes a dead job. Replies 1 when it was there.
struct DiscardCall: ScriptCall {
    static var script: RedisScript { Scripts.discard }
    let keys: [String]
    let arguments: [String]

    init(_ queue: QueueKeys, id: String) {
        keys = [queue.dead]
        arguments = [queue.base, id]
    }
}

/// `cancel.lua`: cancels a job. Replies `queued`, `scheduled`, `retrying`, `running <worker>`, `finished <status>`
/// or nil.
struct CancelCall: ScriptCall {
    static var script: RedisScript { Scripts.cancel }
    let keys: [String]
    let arguments: [String]

    /// `carried`: the stream entry (id and fields) of a job that has no record yet.
    init(_ queue: QueueKeys, id: String, retentionMs: Int64, carried: (entry: String, fields: [String: String])?) {
        keys = [queue.scheduled, queue.retry, queue.stats, queue.stream]
        var arguments = [queue.base, QueueKeys.group, id, String(retentionMs)]
        if let carried {
            arguments += [carried.entry] + [JobField.kind, .payload, .maxAttempts, .visibilityMs].map { carried.fields[$0.rawValue] ?? "" }
        } else {
            arguments += ["", "", "", "", ""]
        }
        self.arguments = arguments
    }
}
