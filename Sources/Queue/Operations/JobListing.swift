import Foundation
import Redis

/// The sets of jobs waiting for a time or for an operator, as the dashboard lists them.
public enum JobSet: String, Sendable, CaseIterable {
    /// Delayed jobs (`base..scheduled`), soonest first.
    case scheduled
    /// Failed jobs waiting for their next attempt (`base..retry`), soonest first.
    case retrying
    /// Jobs that failed for good (`base..dead`), most recent death first.
    case dead

    func key(_ keys: QueueKeys) -> String {
        switch self {
        case .scheduled: keys.scheduled
        case .retrying: keys.retry
        case .dead: keys.dead
        }
    }
}

/// One page of a ``JobSet``, across every queue of the catalog.
public struct JobPage: Sendable {
    /// The jobs of the page, in the set's order.
    public var jobs: [JobRecord]
    /// How many jobs the whole listing has (with a search: how many matched among those searched).
    public var total: Int
    public var offset: Int
    public var limit: Int
    /// A search by kind read only the first ``JobQueue/searchScanLimit`` members of each queue's set.
    public var searchTruncated: Bool
}

extension JobQueue {
    /// How many members of each queue's set a search by kind reads at most (one `HGET` each, pipelined).
    public static let searchScanLimit = 10_000

    /// A page of `set` over every queue, ordered by due time (scheduled, retrying) or newest death first (dead).
    /// - Parameters:
    ///   - search: empty for all; a job id finds that job; anything else keeps jobs whose kind contains it.
    ///   - offset: jobs to skip; `limit`: jobs to return (1…500).
    public func jobs(in set: JobSet, search: String = "", offset: Int = 0, limit: Int = 25) async throws -> JobPage {
        let limit = min(max(limit, 1), 500)
        let offset = max(offset, 0)
        let search = search.trimmingCharacters(in: .whitespaces)
        var members: [(queue: String, id: String, score: Double)] = []
        var total = 0
        var truncated = false
        await syncShardsIfStale()
        if search.isEmpty {
            // Each queue's first offset+limit members; merged, the page is exact.
            let end = String(offset + limit - 1)
            let command = set == .dead ? "ZREVRANGE" : "ZRANGE"
            let queues = allShards
            let replies = try await redis.pipeline(
                queues.flatMap { queue in
                    [[command, set.key(keys(queue)), "0", end, "WITHSCORES"], ["ZCARD", set.key(keys(queue))]]
                })
            for (index, queue) in queues.enumerated() {
                members += Self.scored(replies[index * 2]).map { (queue, $0.id, $0.score) }
                total += replies[index * 2 + 1].int ?? 0
            }
        } else if let id = JobID(rawValue: search) {
            let queues = allShards
            let replies = try await redis.pipeline(queues.map { ["ZSCORE", set.key(keys($0)), id.rawValue] })
            for (queue, reply) in zip(queues, replies) {
                if let score = reply.string.flatMap(Double.init) { members.append((queue, id.rawValue, score)) }
            }
            total = members.count
        } else {
            let needle = search.lowercased()
            for queue in allShards {
                let key = set.key(keys(queue))
                let scanned = Self.scored(
                    try await redis.send(["ZRANGE", key, "0", String(Self.searchScanLimit - 1), "WITHSCORES"]))
                if scanned.count == Self.searchScanLimit, (try await redis.send(["ZCARD", key]).int ?? 0) > scanned.count {
                    truncated = true
                }
                for start in stride(from: 0, to: scanned.count, by: 500) {
                    let chunk = scanned[start..<min(start + 500, scanned.count)]
                    let kinds = try await redis.pipeline(
                        chunk.map { ["HGET", keys(queue).base + "job:" + $0.id, JobField.kind.rawValue] })
                    for (member, kind) in zip(chunk, kinds) where kind.string?.lowercased().contains(needle) == true {
                        members.append((queue, member.id, member.score))
                    }
                }
            }
            total = members.count
        }
        members.sort { set == .dead ? $0.score > $1.score : $0.score < $1.score }
        let page = Array(members.dropFirst(offset).prefix(limit))
        let replies = try await redis.pipeline(page.map { ["HGETALL", keys($0.queue).base + "job:" + $0.id] })
        let jobs = zip(page, replies).compactMap { member, reply -> JobRecord? in
            guard let id = JobID(rawValue: member.id), let fields = reply.fields, !fields.isEmpty else { return nil }
            return JobRecord(id: id, queue: member.queue, fields: fields.compactMapValues(\.string), inDeadSet: set == .dead)
        }
        return JobPage(jobs: jobs, total: total, offset: offset, limit: limit, searchTruncated: truncated)
    }

    /// A `WITHSCORES` reply as (member, score) pairs.
    private static func scored(_ reply: RedisValue) -> [(id: String, score: Double)] {
        let flat = reply.array ?? []
        return stride(from: 0, to: flat.count - 1, by: 2).compactMap { index in
            guard let id = flat[index].string, let score = flat[index + 1].string.flatMap(Double.init) else { return nil }
            return (id, score)
        }
    }
}
