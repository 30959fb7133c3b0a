import Redis

/// The queue engine's Lua scripts, kept as files beside this one (`*.lua`, embedded in the binary at build time) and
/// run with `EVALSHA`. Each runs atomically on the Redis node that holds the queue (all of a queue's keys share the
/// `{queue}` hash tag). Times come from the server's clock (`TIME`), so leases and schedules do not depend on the
/// workers' clocks agreeing. A line `-- @include NAME.lua` stands for that file's text (each file once);
/// `ops/redis-script.sh NAME KEYS… , ARGS…` expands them the same way and runs a script alone with `redis-cli --eval`.
/// Each script's keys and arguments are written by one encoder, `…Call` beside it, in the order its Lua reads them.
///
/// Key layout for queue `q` under prefix `p` (`base` = `p:{q}:`):
/// `base..stream` (stream of jobs, consumer group `workers`; acknowledged entries are trimmed from its head): an
/// entry names a job (`id`) whose record exists, or carries one enqueued without a record (`id`, `kind`, `payload`,
/// `max`, `vis`; its enqueue time is the entry id's), whose record the start script writes,
/// `base..job:<id>` (hash: the job's record, fields `JobField`; a queued job has no `status` and no `attempts` yet:
/// they are written when it starts),
/// `base..scheduled` / `base..retry` (zsets of delayed jobs and retries by due time in ms),
/// `base..dead` (zset by death time, capped), `base..stats` (hash of monotonic totals),
/// `base..unique:<key>` (string: the job id holding the key), `base..cancelled` (set: ids of jobs cancelled while only
/// their stream entry carried them; the start drops each as it reads its entry), `base..cron` (hash: schedule → last fire time),
/// channel `base..events` (`<id> <status>` when a job succeeds, fails or will be retried).
enum Scripts {
    static let enqueue = script("enqueue")
    static let reserve = script("reserve")
    static let start = script("start")
    static let finish = script("finish")
    static let promote = script("promote")
    static let reclaim = script("reclaim")
    static let retryNow = script("retry-now")
    static let discard = script("discard")
    static let cancel = script("cancel")
    static let lanePass = script("lane-pass")
    static let leaseAcquire = script("lease-acquire")
    static let leaseRelease = script("lease-release")
    static let globalLimit = script("global-limit")

    /// Every script file's text as embedded (the includes too), by file name.
    static let files: [String: [UInt8]] = [
        "clock.lua": PackageResources.clock_lua, "helpers.lua": PackageResources.helpers_lua,
        "lanes.lua": PackageResources.lanes_lua, "lane-pass.lua": PackageResources.lane_pass_lua,
        "enqueue.lua": PackageResources.enqueue_lua, "reserve.lua": PackageResources.reserve_lua,
        "start.lua": PackageResources.start_lua, "finish.lua": PackageResources.finish_lua,
        "promote.lua": PackageResources.promote_lua, "reclaim.lua": PackageResources.reclaim_lua,
        "retry-now.lua": PackageResources.retry_now_lua, "discard.lua": PackageResources.discard_lua,
        "cancel.lua": PackageResources.cancel_lua,
        "lease-acquire.lua": PackageResources.lease_acquire_lua, "lease-release.lua": PackageResources.lease_release_lua,
        "global-limit.lua": PackageResources.global_limit_lua,
    ]

    private static func script(_ name: String) -> RedisScript {
        RedisScript(name: name, source: source(of: "\(name).lua"))
    }

    /// A file's text with its includes expanded, each file at most once.
    static func source(of file: String) -> String {
        var included: Set<String> = []
        return expand(file, &included)
    }

    private static func expand(_ file: String, _ included: inout Set<String>) -> String {
        guard included.insert(file).inserted else { return "" }
        guard let bytes = files[file] else { preconditionFailure("no script file \(file) (Sources/Queue/Scripts)") }
        var out = ""
        var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        // A file's last newline ends its last line; it starts none.
        if lines.last == "" { lines.removeLast() }
        for line in lines {
            if line.hasPrefix(includeMark) {
                out += expand(String(line.dropFirst(includeMark.count)), &included)
            } else {
                out += line + "\n"
            }
        }
        return out
    }

    static let includeMark = "-- @include "
}

/// One call of a script: its keys and arguments, in the order its Lua reads them.
protocol ScriptCall {
    static var script: RedisScript { get }
    var keys: [String] { get }
    var arguments: [String] { get }
}

extension RedisClient {
    @discardableResult
    func run<Call: ScriptCall>(_ call: Call) async throws -> RedisValue {
        try await run(Call.script, keys: call.keys, arguments: call.arguments)
    }
}
