import Logging
import Synchronization

/// The queues' upkeep, done by one process at a time: moving due delayed jobs and retries onto their streams
/// (every `promoteInterval`), and handing back jobs whose lease ran out, trimming each stream's acknowledged head and
/// forgetting consumers of dead workers (the reclaim script, every `reclaimInterval`), for every queue of the catalog;
/// handing what ended jobs owe their reservations to the ledger (with the promotion), and the process's own leader
/// tasks (a transactional outbox's relay).
///
/// Every worker runs one; the holder of the upkeep lease does the work and the others only ask for the lease every
/// third of its time to live (River's leader election, Oban's Stager and Lifeline). Before, every worker promoted and
/// reclaimed every queue itself: Redis calls that grew with the number of workers times the number of queues, for the
/// same work. Correctness never depends on one leader: both scripts are atomic and idempotent, so two processes that
/// briefly both believe they lead (a paused leader whose lease ran out) only do the same work twice; a slow or dead
/// leader only delays promotion and reclaim, by at most the lease's time to live, until another takes over.
final class Upkeep: Sendable {
    let queue: JobQueue
    let lease: LeaderLease
    let promoteInterval: Duration
    let reclaimInterval: Duration
    let ledger: (any ReservationLedger)?
    let tasks: [LeaderTask]
    let logger: Logger
    /// Whether this process holds the lease, for the leader work that runs beside the loop (`runLeaderWork`).
    private let leadingNow = Atomic<Bool>(false)
    /// The most jobs one promote call moves per queue; a full batch is followed at once by the next.
    static let promoteBatch = 1000

    init(
        queue: JobQueue, holder: String, ttl: Duration, promoteInterval: Duration, reclaimInterval: Duration,
        ledger: (any ReservationLedger)? = nil, tasks: [LeaderTask] = [], logger: Logger
    ) {
        self.queue = queue
        self.ledger = ledger
        self.tasks = tasks
        self.lease = LeaderLease(redis: queue.redis, key: queue.upkeepLeaseKey, holder: holder, ttl: ttl)
        self.promoteInterval = promoteInterval
        self.reclaimInterval = reclaimInterval
        self.logger = logger
    }

    /// Runs until its task is cancelled, then gives the lease up so another process takes over at once.
    func run() async {
        var leaseStreak = FailureStreak("renewing the upkeep lease")
        var promoteStreak = FailureStreak("promoting due jobs")
        var reclaimStreak = FailureStreak("reclaiming expired leases")
        let leaderWork = Task { await self.runLeaderWork() }
        var leading = false
        var leadUntil = ContinuousClock.now
        var nextRenewal = ContinuousClock.now
        var nextPromotion = ContinuousClock.now
        var nextReclaim = ContinuousClock.now
        while !Task.isCancelled {
            if .now >= nextRenewal {
                let asked = ContinuousClock.now
                do {
                    let held = try await lease.acquireOrRenew()
                    leaseStreak.succeeded(logger: logger)
                    if held {
                        leadUntil = asked + lease.ttl
                        if !leading { (nextPromotion, nextReclaim) = (.now, .now) }
                    }
                    setLeading(held, &leading)
                    nextRenewal = asked + lease.ttl / 3
                } catch {
                    nextRenewal = .now + min(lease.ttl / 3, leaseStreak.failed(error, logger: logger))
                }
            }
            // Unrenewed (Redis away), the lease may have passed to another process: stop before it could have.
            if ContinuousClock.now >= leadUntil { setLeading(false, &leading) }
            if leading && .now >= nextPromotion {
                nextPromotion = .now + (await pace(promoteInterval, &promoteStreak) { try await self.promote() })
            }
            if leading && .now >= nextReclaim {
                nextReclaim = .now + (await pace(reclaimInterval, &reclaimStreak) { try await self.reclaim() })
            }
            let wake = leading ? min(nextRenewal, nextPromotion, nextReclaim) : nextRenewal
            try? await Task.sleep(until: wake)
        }
        // Its rounds use the clients the process closes once this returns: the round in progress ends first. Cancelled
        // and left running, it failed against closed clients and logged an error at every stop.
        leaderWork.cancel()
        await leaderWork.value
        if leading { try? await lease.release() }
    }

    /// The ledger's settlements (every `promoteInterval`) and the leader tasks, on a task of their own beside the
    /// loop: they wait on Postgres, and a slow database must not hold up promotion, reclaim or the lease's renewal. They
    /// run while the loop holds the lease (looked at every 200 ms at least).
    private func runLeaderWork() async {
        guard ledger != nil || !tasks.isEmpty else { return }
        var settleStreak = FailureStreak("settling reservations")
        var taskStreaks = tasks.map { FailureStreak($0.name) }
        var nextSettle = ContinuousClock.now
        var nextTasks = tasks.map { _ in ContinuousClock.now }
        var led = false
        while !Task.isCancelled {
            let leading = leadingNow.load(ordering: .acquiring)
            if leading && !led {
                nextSettle = .now
                nextTasks = tasks.map { _ in .now }
            }
            led = leading
            var wake = ContinuousClock.now + .milliseconds(200)
            if leading {
                if let ledger {
                    if .now >= nextSettle {
                        nextSettle = .now + (await pace(promoteInterval, &settleStreak) { try await self.settle(ledger) })
                    }
                    wake = min(wake, nextSettle)
                }
                for index in tasks.indices {
                    if .now >= nextTasks[index] {
                        nextTasks[index] =
                            .now + (await pace(tasks[index].interval, &taskStreaks[index]) { try await self.tasks[index].run() })
                    }
                    wake = min(wake, nextTasks[index])
                }
            }
            try? await Task.sleep(until: wake)
        }
    }

    private func setLeading(_ held: Bool, _ leading: inout Bool) {
        leadingNow.store(held, ordering: .releasing)
        guard held != leading else { return }
        leading = held
        logger.info(held ? "this process now runs the queues' upkeep" : "this process no longer runs the queues' upkeep")
    }

    /// Runs one round; returns how long to wait for the next (longer after failures).
    private func pace(_ interval: Duration, _ streak: inout FailureStreak, _ round: () async throws -> Void) async -> Duration {
        do {
            try await round()
            streak.succeeded(logger: logger)
            return interval
        } catch {
            return max(interval, streak.failed(error, logger: logger))
        }
    }

    /// Every queue is tried even when one fails; the first failure is rethrown for the streak.
    private func promote() async throws {
        try await forEachQueue { name in
            for _ in 0..<10 {
                guard try await self.queue.promoteDueJobs(queue: name, limit: Self.promoteBatch).moved == Self.promoteBatch else { break }
            }
        }
    }

    private func reclaim() async throws {
        try await forEachQueue { name in
            let ids = try await self.queue.reclaimExpiredLeases(queue: name)
            if !ids.isEmpty {
                self.logger.warning("re-queued jobs whose lease expired", metadata: ["queue": "\(name)", "count": "\(ids.count)"])
            }
        }
    }

    private func settle(_ ledger: any ReservationLedger) async throws {
        try await forEachQueue { name in _ = try await self.queue.settle(queue: name, with: ledger) }
    }

    private func forEachQueue(_ body: (String) async throws -> Void) async throws {
        var firstError: (any Error)?
        await queue.syncShardsIfStale()
        for name in queue.allShards {
            do { try await body(name) } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }
}

extension JobQueue {
    /// The upkeep lease's key: its value is the consumer name of the worker running the upkeep.
    public var upkeepLeaseKey: String { "\(options.prefix):upkeep:leader" }
}
