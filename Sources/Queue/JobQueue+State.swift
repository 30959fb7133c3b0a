import Redis

/// A queue at one moment, as `/metrics` shows it: its jobs by state and how long its oldest waiting job has waited.
public struct QueueState: Sendable, Equatable {
    public var queue: String
    /// Runnable and not yet delivered to a worker (in their fair lanes too).
    public var queued: Int
    /// Delivered and not yet finished.
    public var running: Int
    /// Delayed: runnable from a later time.
    public var scheduled: Int
    /// Failed, waiting for their next attempt.
    public var retrying: Int
    public var dead: Int
    /// Age of the oldest job that could run now and was not delivered: since its stream entry (added when it was
    /// enqueued, or when its delay or backoff ended), or since its due time while it still waits for promotion.
    /// Delayed and retrying jobs that are not yet due do not count. Zero when none waits. By Redis's clock.
    public var latency: Duration
}

extension JobQueue {
    /// Every queue's state in two pipelined round trips (counts and heads, then the first undelivered entry of each
    /// queue that has one): cheap enough for every scrape. A sharded queue's counts are its shards' added up, its
    /// latency their longest.
    public func states() async throws -> [QueueState] {
        var byQueue: [String: QueueState] = [:]
        for state in try await shardStates() {
            let queue = QueueShards.queue(ofShard: state.queue)
            guard var sum = byQueue[queue] else {
                byQueue[queue] = QueueState(
                    queue: queue, queued: state.queued, running: state.running, scheduled: state.scheduled,
                    retrying: state.retrying, dead: state.dead, latency: state.latency)
                continue
            }
            sum.queued += state.queued
            sum.running += state.running
            sum.scheduled += state.scheduled
            sum.retrying += state.retrying
            sum.dead += state.dead
            sum.latency = max(sum.latency, state.latency)
            byQueue[queue] = sum
        }
        return catalog.queues.compactMap { byQueue[$0] }
    }

    /// Each Redis queue's state (each shard's apart).
    private func shardStates() async throws -> [QueueState] {
        await syncShardsIfStale()
        let queues = allShards
        let perQueue = 8
        var commands: [[String]] = [["TIME"]]
        for queue in queues {
            let k = keys(queue)
            commands += [
                ["XLEN", k.stream], ["XINFO", "GROUPS", k.stream], ["ZCARD", k.scheduled], ["ZCARD", k.retry], ["ZCARD", k.dead],
                ["ZRANGE", k.scheduled, "0", "0", "WITHSCORES"], ["ZRANGE", k.retry, "0", "0", "WITHSCORES"], ["GET", k.lanesWaiting],
            ]
        }
        let replies = try await redis.pipeline(commands)
        guard let time = replies[0].array, time.count == 2, let seconds = time[0].int, let micros = time[1].int else {
            throw RedisError(.protocolError, "TIME answered \(replies[0])")
        }
        let nowMs = Int64(seconds) * 1000 + Int64(micros) / 1000
        var states: [QueueState] = []
        // The first undelivered entry of each queue with waiting jobs: after the group's last delivered id (exclusive),
        // or the stream's first entry before any worker created the group.
        var heads: [(index: Int, command: [String])] = []
        for (index, queue) in queues.enumerated() {
            let r = Array(replies[1 + index * perQueue..<1 + (index + 1) * perQueue])
            let stream = StreamCounts(length: r[0], groups: r[1])
            var oldestDueMs: Int64?
            for head in [r[5], r[6]] {
                guard let pair = head.array, pair.count == 2, let score = pair[1].string.flatMap(Double.init) else { continue }
                let due = Int64(score)
                if due <= nowMs { oldestDueMs = min(oldestDueMs ?? due, due) }
            }
            let age = oldestDueMs.map { nowMs - $0 } ?? 0
            states.append(
                QueueState(
                    queue: queue, queued: stream.queued + (r[7].string.flatMap { Int($0) } ?? 0), running: stream.running,
                    scheduled: r[2].int ?? 0, retrying: r[3].int ?? 0,
                    dead: r[4].int ?? 0, latency: .milliseconds(age)))
            if stream.queued > 0 { heads.append((index, ["XRANGE", keys(queue).stream, stream.undeliveredFrom, "+", "COUNT", "1"])) }
        }
        guard !heads.isEmpty else { return states }
        let entries = try await redis.pipeline(heads.map(\.command))
        for (head, reply) in zip(heads, entries) {
            guard let id = reply.array?.first?.array?.first?.string, let ms = id.split(separator: "-").first.flatMap({ Int64($0) })
            else { continue }
            let age = Duration.milliseconds(max(0, nowMs - ms))
            if age > states[head.index].latency { states[head.index].latency = age }
        }
        return states
    }
}

extension JobQueue {
    /// Each queue's latency alone (the dashboard's overview): see ``QueueState/latency``.
    public func latencies() async throws -> [String: Duration] {
        Dictionary(uniqueKeysWithValues: try await states().map { ($0.queue, $0.latency) })
    }
}

/// What a queue's stream holds for the workers' group, from `XLEN` and `XINFO GROUPS`. The stream keeps acknowledged
/// entries until the finished head is trimmed, so what waits is the group's lag (entries not yet delivered) and what
/// runs its pending count. Before any worker created the group (XINFO fails or lists no group), every entry waits.
struct StreamCounts {
    var queued: Int
    var running = 0
    /// The `XRANGE` start of the first undelivered entry: after the group's last delivered id, or the stream's start.
    var undeliveredFrom = "-"

    init(length: RedisValue, groups: RedisValue) {
        queued = length.int ?? 0
        if let group = groups.array?.lazy.compactMap(\.fields).first(where: { $0["name"]?.string == QueueKeys.group }) {
            running = group["pending"]?.int ?? 0
            queued = group["lag"]?.int ?? max(0, queued - running)
            undeliveredFrom = "(" + (group["last-delivered-id"]?.string ?? "0-0")
        }
    }
}
