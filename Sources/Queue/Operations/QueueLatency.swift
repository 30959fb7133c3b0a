import Foundation
import Redis

extension JobQueue {
    /// Per queue, how long its oldest waiting job (runnable, not yet handed to a worker) has waited: the age of the
    /// first stream entry after the consumer group's last delivered one (the entry id is its enqueue time on Redis's
    /// clock, and age is measured on that clock too). Zero when nothing waits. Delayed jobs and retries do not count
    /// until they are due.
    public func latencies() async throws -> [String: Duration] {
        let queues = catalog.queues
        let groups = try await redis.pipeline([["TIME"]] + queues.map { ["XINFO", "GROUPS", keys($0).stream] })
        let time = groups[0].array ?? []
        let nowMs = (time.first?.string.flatMap(Int64.init) ?? 0) * 1000 + (time.dropFirst().first?.string.flatMap(Int64.init) ?? 0) / 1000
        let starts = zip(queues, groups.dropFirst()).map { queue, reply -> [String] in
            let group = reply.array?.lazy.compactMap(\.fields).first { $0["name"]?.string == QueueKeys.group }
            let after = group?["last-delivered-id"]?.string.map { "(" + $0 } ?? "-"
            return ["XRANGE", keys(queue).stream, after == "(0-0" ? "-" : after, "+", "COUNT", "1"]
        }
        let firsts = try await redis.pipeline(starts)
        var latencies: [String: Duration] = [:]
        for (queue, reply) in zip(queues, firsts) {
            let entryID = reply.array?.first?.array?.first?.string ?? ""
            let enqueuedMs = Int64(entryID.prefix { $0 != "-" })
            latencies[queue] = enqueuedMs.map { .milliseconds(max(0, nowMs - $0)) } ?? .zero
        }
        return latencies
    }
}
