import Redis

/// `promote.lua`: moves due delayed jobs and retries onto the stream. Replies {moved, ms until the next due or -1}.
struct PromoteCall: ScriptCall {
    static var script: RedisScript { Scripts.promote }
    let keys: [String]
    let arguments: [String]

    init(_ queue: QueueKeys, limit: Int) {
        keys = [queue.stream, queue.scheduled, queue.retry]
        arguments = [String(limit)]
    }
}

/// `reclaim.lua`: hands back jobs whose lease ran out; forgets consumers that hold nothing and were idle longer than
/// `consumerIdleMs`. Replies the ids handed back.
struct ReclaimCall: ScriptCall {
    static var script: RedisScript { Scripts.reclaim }
    let keys: [String]
    let arguments: [String]

    init(_ queue: QueueKeys, minimumIdleMs: Int64, limit: Int, consumerIdleMs: Int64) {
        keys = [queue.stream]
        arguments = [queue.base, QueueKeys.group, String(minimumIdleMs), String(limit), String(consumerIdleMs)]
    }
}

/// `lease-acquire.lua`: takes or renews a lease. Replies 1 when the holder has it.
struct LeaseAcquireCall: ScriptCall {
    static var script: RedisScript { Scripts.leaseAcquire }
    let keys: [String]
    let arguments: [String]

    init(key: String, holder: String, ttlMs: Int64) {
        keys = [key]
        arguments = [holder, String(ttlMs)]
    }
}

/// `lease-release.lua`: gives a lease up if the holder still has it.
struct LeaseReleaseCall: ScriptCall {
    static var script: RedisScript { Scripts.leaseRelease }
    let keys: [String]
    let arguments: [String]

    init(key: String, holder: String) {
        keys = [key]
        arguments = [holder]
    }
}
