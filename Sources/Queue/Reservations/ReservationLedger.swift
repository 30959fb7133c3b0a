import Redis

/// What a job's reservation comes to as the job ends.
public struct Settlement: Sendable, Equatable {
    public enum Outcome: String, Sendable {
        /// The job succeeded: what it held is spent.
        case charge
        /// The job died, was cancelled or ran out of attempts: what it held goes back.
        case release
    }

    /// The reservation as the producer named it (``EnqueueOptions/reservation``, e.g. `scan:42`).
    public var reservation: String
    public var job: JobID
    public var outcome: Outcome

    public init(reservation: String, job: JobID, outcome: Outcome) {
        self.reservation = reservation
        self.job = job
        self.outcome = outcome
    }
}

/// Where reservations are kept (e.g. a user's scans in Postgres), settled by the queue: each job that carries a
/// reservation is settled once as it ends, `charge` when its handler succeeded, `release` when it ended dead (a
/// permanent failure, its last attempt, a worker crashing under it too often), cancelled, or without a handler.
///
/// The queue notes the settlement in the same Redis script that records the job's end, so no end goes without
/// one; the upkeep leader hands them here in batches and forgets them only after `settle` returned. A settlement
/// can therefore arrive twice (a leader that died between the two steps): `settle` must change a reservation at
/// most once, e.g. guarded by its status (`… WHERE status = 'reserved'`). Handlers never settle anything themselves.
public protocol ReservationLedger: Sendable {
    func settle(_ settlements: [Settlement]) async throws
}

/// A task the upkeep leader runs every `interval` besides the queues' own upkeep (e.g. a transactional outbox's
/// relay): one process at a time runs it, another takes over within the lease's time to live when it dies.
public struct LeaderTask: Sendable {
    public var name: String
    public var interval: Duration
    public var run: @Sendable () async throws -> Void

    public init(_ name: String, every interval: Duration, _ run: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.interval = interval
        self.run = run
    }
}

extension QueueKeys {
    /// Stream of settlements owed by jobs that ended holding a reservation (`id`, `how`, `resv`).
    public var settlements: String { base + "settle" }
}

extension JobQueue {
    /// Up to `limit` settlements owed on `queue` (one shard), oldest first, with their stream entry ids (nil for an
    /// entry that does not read as one).
    public func settlements(queue: String, limit: Int) async throws -> [(entry: String, settlement: Settlement?)] {
        let reply = try await redis.send(["XRANGE", keys(queue).settlements, "-", "+", "COUNT", String(limit)])
        return (reply.array ?? []).compactMap { item -> (String, Settlement?)? in
            guard let parts = item.array, parts.count == 2, let entry = parts[0].string, let fields = parts[1].fields else { return nil }
            guard let text = fields["id"]?.string, let id = JobID(rawValue: text), let reservation = fields["resv"]?.string,
                let outcome = fields["how"]?.string.flatMap(Settlement.Outcome.init(rawValue:))
            else { return (entry, nil) }
            return (entry, Settlement(reservation: reservation, job: id, outcome: outcome))
        }
    }

    /// Forgets settlements the ledger took.
    public func forgetSettlements(queue: String, entries: [String]) async throws {
        guard !entries.isEmpty else { return }
        _ = try await redis.send(["XDEL", keys(queue).settlements] + entries)
    }

    /// Hands `queue`'s owed settlements to `ledger`, up to `batch` at a time until none are left: how many it settled.
    public func settle(queue: String, with ledger: any ReservationLedger, batch: Int = 500) async throws -> Int {
        var settled = 0
        while true {
            let owed = try await settlements(queue: queue, limit: batch)
            if owed.isEmpty { return settled }
            // An entry that does not read as a settlement (hand-written into the stream) is dropped, not retried forever.
            try await ledger.settle(owed.compactMap(\.settlement))
            try await forgetSettlements(queue: queue, entries: owed.map(\.entry))
            settled += owed.count
            if owed.count < batch { return settled }
        }
    }
}
