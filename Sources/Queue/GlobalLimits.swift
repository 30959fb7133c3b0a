import Durations
import Foundation
import Logging
import Redis
import Synchronization

/// The queues' limits across every worker process (`global_limit:` in their job files): how many of a queue's jobs
/// run at once in the whole deployment, however many pods an autoscaler adds.
///
/// A process leases permits in Redis before it fetches (`global-limit.lua`: a hash of holders and a sorted set of their
/// leases, on the queue's own keys): it asks for as many as it could start, keeps one per job it started, gives the
/// rest back as the fetch returns, and a job's as the job ends. The leases are renewed with the jobs' own leases; a
/// process that dies keeps its permits until its lease runs out, then the next caller drops them.
///
/// Every call tells Redis what the process holds, not a difference, and the calls go one at a time: a lost reply or a
/// Redis that restarted empty is set right by the next call.
final class GlobalLimits: Sendable {
    private struct State {
        var limits: [String: Int]
        /// Permits held by queue: one per started job, plus a fetch's grants until it returns.
        var held: [String: Int] = [:]
        /// The running jobs that hold a permit, with their queue: by stream entry, as ``InFlight`` keys them (a job
        /// delivered again while it still runs here holds a second permit).
        var holders: [RunKey: String] = [:]
        /// Holdings changed since Redis was last told.
        var stale = false
        var flushing = false
    }

    private let queue: JobQueue
    private let holder: String
    private let lease: Duration
    private let logger: Logger
    private let state: Mutex<State>
    private let calls = AsyncLock()

    /// How often a fetcher whose queue is at its global limit looks again (the permits other processes give back
    /// are not announced).
    static let pollInterval = Duration.milliseconds(50)
    /// How long given-back permits wait to be folded into one call.
    static let giveBackDelay = Duration.milliseconds(2)

    init(queue: JobQueue, holder: String, limits: [String: Int], lease: Duration, logger: Logger) {
        self.queue = queue
        self.holder = holder
        self.lease = lease
        self.logger = logger
        state = Mutex(State(limits: limits))
    }

    /// The limited queues and their limits.
    var limits: [String: Int] { state.withLock { $0.limits } }

    /// Replaces the limits (a reload of settings). A lowered limit holds for the next grants; running jobs keep theirs.
    func setLimits(_ limits: [String: Int]) {
        state.withLock { $0.limits = limits }
    }

    /// Up to `wanted` more permits of `queueName`, within its limit across processes: the jobs this process may start.
    func take(_ queueName: String, wanted: Int) async throws -> Int {
        await calls.lock()
        defer { calls.unlock() }
        let (limit, mine) = state.withLock { ($0.limits[queueName], $0.held[queueName, default: 0]) }
        guard let limit else { return wanted }
        let granted = try await call(queueName, holding: mine, wanted: wanted, limit: limit)
        state.withLock { $0.held[queueName, default: 0] += granted }
        return granted
    }

    /// `job` started on one of its queue's permits: it keeps it until it ends.
    func hold(_ job: ReservedJob) {
        let name = QueueShards.queue(ofShard: job.queue)
        state.withLock { $0.holders[job.runKey] = name }
    }

    /// A fetch of `queueName` returned: of its `granted` permits, those not held by a job started are given back.
    func fetched(_ queueName: String, granted: Int, started: Int) {
        guard granted > started else { return }
        state.withLock { state in
            state.held[queueName] = max(0, state.held[queueName, default: 0] - (granted - started))
            state.stale = true
        }
        flush()
    }

    /// `job` ended (or was handed back): its permit, if it held one, is given back.
    func ended(_ job: ReservedJob) {
        let released = state.withLock { state -> Bool in
            guard !state.holders.isEmpty, let name = state.holders.removeValue(forKey: job.runKey) else { return false }
            state.held[name] = max(0, state.held[name, default: 0] - 1)
            state.stale = true
            return true
        }
        if released { flush() }
    }

    /// Tells Redis what is held now and renews the lease (the worker's heartbeat).
    func renew() async throws {
        await calls.lock()
        defer { calls.unlock() }
        try await tell()
    }

    /// Tells Redis, in the background, what is held now; calls made while one is on its way are folded into the next.
    private func flush() {
        let start = state.withLock { state -> Bool in
            guard !state.flushing else { return false }
            state.flushing = true
            return true
        }
        guard start else { return }
        Task {
            // Ends within this wait go back in one call: a call per job end cost Redis 5 µs and the worker 4.5 µs per
            // no-op job (ops/bench/setting-cost.sh). Others see the permits this much later.
            try? await Task.sleep(for: Self.giveBackDelay)
            while true {
                await calls.lock()
                let more = state.withLock { state -> Bool in
                    if !state.stale { state.flushing = false }
                    return state.stale
                }
                guard more else { return calls.unlock() }
                do {
                    try await tell()
                    calls.unlock()
                } catch {
                    // The next heartbeat tells it again.
                    state.withLock { $0.flushing = false }
                    calls.unlock()
                    logger.debug("giving back global permits failed", metadata: ["error": "\(error)"])
                    return
                }
            }
        }
    }

    /// Every limited queue's holding, sent (the caller holds `calls`).
    private func tell() async throws {
        let (limits, held) = state.withLock { state in
            state.stale = false
            return (state.limits, state.held)
        }
        do {
            for (name, limit) in limits.sorted(by: { $0.key < $1.key }) {
                _ = try await call(name, holding: held[name, default: 0], wanted: 0, limit: limit)
            }
        } catch {
            state.withLock { $0.stale = true }
            throw error
        }
    }

    private func call(_ queueName: String, holding: Int, wanted: Int, limit: Int) async throws -> Int {
        let reply = try await queue.redis.run(
            GlobalLimitCall(queue.keys(queueName), holder: holder, holding: holding, wanted: wanted, limit: limit, lease: lease))
        guard let granted = reply.array?.first?.int else { throw RedisError(.protocolError, "global-limit: unexpected reply \(reply)") }
        return granted
    }
}

extension JobQueue {
    /// The permits of `queueName`'s limit across processes held by live processes now (a holder whose lease ran out is
    /// not counted: the next grant drops it).
    public func permitsHeld(queue queueName: String) async throws -> Int {
        let keys = keys(queueName)
        let now = Int(Date().timeIntervalSince1970 * 1000)
        let live = try await redis.send(["ZRANGEBYSCORE", keys.limitLeases, String(now), "+inf"]).array?.compactMap(\.string) ?? []
        guard !live.isEmpty else { return 0 }
        let counts = try await redis.send(["HMGET", keys.limitHeld] + live).array ?? []
        return counts.compactMap { Int($0.string ?? "") }.reduce(0, +)
    }
}

/// One fetch's permits of the queues limited across processes: taken queue by queue as the fetch reads, one kept by
/// each job it starts, the rest given back (before a blocking read, and as the fetch ends).
final class FetchPermits {
    private let global: GlobalLimits
    private let limited: [String: Int]
    private var granted: [String: Int] = [:]
    private var kept: [String: Int] = [:]

    init(_ global: GlobalLimits) {
        self.global = global
        limited = global.limits
    }

    /// Whether `queueName` has a limit across processes.
    func limits(_ queueName: String) -> Bool { limited[queueName] != nil }

    /// Up to `wanted` permits of `queueName`; returns how many were granted.
    func take(_ queueName: String, wanted: Int) async throws -> Int {
        let count = try await global.take(queueName, wanted: wanted)
        granted[queueName, default: 0] += count
        return count
    }

    /// Permits for the limited queues among `shards`, as many as each one's room here (or `wanted`): its room becomes
    /// what it was granted.
    func take(into room: inout [String: Int], wanted: Int, queues shards: [String]) async throws {
        for name in Set(shards.map(QueueShards.queue(ofShard:))).sorted() where limits(name) {
            let here = min(wanted, room[name] ?? wanted)
            room[name] = here > 0 ? try await take(name, wanted: here) : 0
        }
    }

    /// `job` started: it keeps one of its queue's permits until it ends.
    func started(_ job: ReservedJob) {
        guard !limited.isEmpty else { return }
        let name = QueueShards.queue(ofShard: job.queue)
        guard limits(name) else { return }
        kept[name, default: 0] += 1
        global.hold(job)
    }

    /// Gives back the permits no started job keeps.
    func giveBackUnused() {
        for (name, count) in granted where count > kept[name, default: 0] {
            global.fetched(name, granted: count, started: kept[name, default: 0])
        }
        granted = kept
    }
}

/// What `global-limit.lua` is called with.
struct GlobalLimitCall: ScriptCall {
    static var script: RedisScript { Scripts.globalLimit }
    let keys: [String]
    let arguments: [String]

    init(_ queue: QueueKeys, holder: String, holding: Int, wanted: Int, limit: Int, lease: Duration) {
        keys = [queue.limitHeld, queue.limitLeases]
        arguments = [holder, String(holding), String(wanted), String(limit), String(lease.milliseconds)]
    }
}

/// One holder at a time across suspension points: the calls of one ``GlobalLimits`` reach Redis in order.
final class AsyncLock: Sendable {
    private let state = Mutex<(locked: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func lock() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                guard state.locked else {
                    state.locked = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func unlock() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.locked = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
