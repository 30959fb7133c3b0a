import Redis

extension JobQueue {
    /// A warning when Redis may evict keys under memory pressure (`maxmemory-policy` other than `noeviction`): it
    /// would drop queued jobs and their records without a trace, as BullMQ also warns. Read from `INFO memory`,
    /// which managed Redis services answer even where `CONFIG GET` is disabled. Nil when the policy is safe.
    public func evictionWarning() async throws -> String? {
        let info = try await redis.send(["INFO", "memory"]).string ?? ""
        guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("maxmemory_policy:") }) else { return nil }
        let policy = line.dropFirst("maxmemory_policy:".count).trimmingCharacters(in: .whitespaces)
        guard policy != "noeviction" else { return nil }
        return
            "Redis maxmemory-policy is \(policy): when memory fills, Redis evicts keys and queued jobs are lost; set maxmemory-policy noeviction"
    }
}
