import Foundation
import Queue

extension QueueBench {
    /// The one-by-one enqueue against its physical limit, one `redis-benchmark -c 1 -P 1` round trip: the jobs in
    /// `singleRounds` rounds (default one), LPUSH before and after each; each round's share is against the mean of the
    /// yardsticks beside it, and the figure is the median share. Short rounds flatter us: the first 2,000 calls after
    /// a redis-benchmark run go faster than the next (8,596 then 5,384–7,302/s, measured 2026-11-26),
    /// so ten rounds put our share near 1.0 where one long run puts it near 0.85. The XADD a noop enqueue sends is
    /// measured once before and once after (Redis's work on the entry over an LPUSH's). CPU per call, user and system,
    /// and user only: ours (this process, over the rounds only) and redis-benchmark's (a C loop over one socket).
    func singlePhase(_ queue: JobQueue) async throws -> [String: Double] {
        var r: [String: Double] = [:]
        let rounds = max(1, singleRounds)
        let perRound = max(1, jobs / rounds)
        let xadd = try queue.entryCommand(kind: "noop", payload: "{}")
        let xaddRequests = perRound * rounds / 2
        let children = CPUTime(RUSAGE_CHILDREN)
        let xaddBefore = try await yardstick(xadd, answer: "XADD", requests: xaddRequests)
        let xaddCPU = CPUTime(RUSAGE_CHILDREN) - children
        r["xadd_c1_p1_client_cpu_us"] = xaddCPU.all * 1e6 / Double(xaddRequests)
        r["xadd_c1_p1_client_user_cpu_us"] = xaddCPU.user * 1e6 / Double(xaddRequests)

        let lpush = { try await yardstick(["-t", "lpush"], answer: "LPUSH", requests: perRound) }
        var yardsticks = [try await lpush()]
        var ours: [Double] = []
        var cpu = CPUTime()
        for _ in 0..<rounds {
            let own = CPUTime(RUSAGE_SELF)
            ours.append(try await singleEnqueue(queue, count: perRound, inFlight: 1))
            cpu = cpu + (CPUTime(RUSAGE_SELF) - own)
            yardsticks.append(try await lpush())
        }
        let xaddAfter = try await yardstick(xadd, answer: "XADD", requests: xaddRequests)

        r["single_enqueue_per_s"] = median(ours)
        r["single_enqueue_client_cpu_us"] = cpu.all * 1e6 / Double(perRound * rounds)
        r["single_enqueue_client_user_cpu_us"] = cpu.user * 1e6 / Double(perRound * rounds)
        let measured = yardsticks.compactMap { $0 }
        if measured.count == yardsticks.count {
            let shares = ours.indices.map { ours[$0] / ((measured[$0] + measured[$0 + 1]) / 2) }
            r["lpush_c1_p1_per_s"] = median(measured)
            r["single_enqueue_share_of_lpush"] = median(shares)
            r["single_enqueue_share_of_lpush_min"] = shares.min()
            r["single_enqueue_share_of_lpush_max"] = shares.max()
        }
        if let xaddBefore, let xaddAfter {
            r["xadd_c1_p1_per_s"] = (xaddBefore + xaddAfter) / 2
            r["single_enqueue_share_of_xadd"] = median(ours) / ((xaddBefore + xaddAfter) / 2)
        }
        return r
    }
}
