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
