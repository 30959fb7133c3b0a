import Redis

extension JobQueue {
    /// A warning when Redis may evict keys under memory pressure (`maxmemory-policy` other than `noeviction`): it
    /// would drop queued jobs and their records without a trace, as BullMQ also warns. Read from `INFO memory`,
    /// which managed Redis services answer even where `CONFIG GET` is disabled (every master's, on a cluster). Nil
    /// when the policy is safe.
    public func evictionWarning() async throws -> String? {
        for reply in try await redis.onEveryMaster(["INFO", "memory"]) {
            let info = reply.string ?? ""
            guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("maxmemory_policy:") }) else { continue }
            let policy = line.dropFirst("maxmemory_policy:".count).trimmingCharacters(in: .whitespaces)
            guard policy != "noeviction" else { continue }
            return
                "Redis maxmemory-policy is \(policy): when memory fills, Redis evicts keys and queued jobs are lost; set maxmemory-policy noeviction"
        }
        return nil
    }
}
