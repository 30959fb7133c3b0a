import Logging
import Outbox
import Postgres
import Queue
import Store

/// The queue's ledger for the quota jobs hold (``QuotaReservation``: a scan of an analysis, a chat of a day): each
/// batch of settlements the upkeep leader hands over is applied in one transaction. A reservation the ledger does
/// not know (another application's on the same Redis) is ignored.
package struct QuotaLedger: ReservationLedger {
    let database: PostgresClient

    package init(database: PostgresClient) { self.database = database }

    package func settle(_ settlements: [Settlement]) async throws {
        var charged: [QuotaReservation] = []
        var released: [QuotaReservation] = []
        for settlement in settlements {
            guard let reservation = QuotaReservation(settlement.reservation) else { continue }
            switch settlement.outcome {
            case .charge: charged.append(reservation)
            case .release: released.append(reservation)
            }
        }
        guard !charged.isEmpty || !released.isEmpty else { return }
        try await database.transaction { tx in
            try await QuotaReservation.settle(charged: charged, released: released, in: tx)
        }
    }
}

extension QuotaLedger {
    /// Releases reservations whose job is gone without an end: still reserved after `age`, not waiting in the outbox,
    /// and no record of the job in Redis (a job waiting, running or ended within its retention has one). Only lost data
    /// gets here (a Redis failover that dropped an acknowledged enqueue, a flushed database): every end of a job notes
    /// its settlement in the script that records the end. Returns how many it released.
    @discardableResult
    package func releaseLost(queue: JobQueue, olderThan age: Duration = .seconds(3600), limit: Int = 1000) async throws -> Int {
        let rows = try await database.query(
            """
            SELECT 'scan:' || photo_id AS reservation, job_id::text AS job_id FROM scan_reservations r
            WHERE status = 'reserved' AND created_at < now() - make_interval(secs => $1)
              AND NOT EXISTS (SELECT 1 FROM job_outbox o WHERE o.job_id = r.job_id)
            UNION ALL
            SELECT 'chat:' || message_id, job_id::text FROM chat_reservations r
            WHERE status = 'reserved' AND created_at < now() - make_interval(secs => $1)
              AND NOT EXISTS (SELECT 1 FROM job_outbox o WHERE o.job_id = r.job_id)
            LIMIT $2
            """,
            [Double(age.milliseconds) / 1000, limit])
        var lost: [Settlement] = []
        for row in rows {
            let reservation: String = try row.decode("reservation")
            let job = try (row.decode("job_id") as String?).flatMap(JobID.init(rawValue:))
            if let job, try await queue.record(job) != nil { continue }
            lost.append(Settlement(reservation: reservation, job: job ?? .random(), outcome: .release))
        }
        try await settle(lost)
        return lost.count
    }

    /// ``releaseLost(queue:olderThan:limit:)`` as a task of the upkeep leader.
    package func lostJobsTask(queue: JobQueue, every interval: Duration = .seconds(600)) -> LeaderTask {
        LeaderTask("releasing the reservations of lost jobs", every: interval) { _ = try await releaseLost(queue: queue) }
    }
}

extension WorkerOptions {
    /// CarbScan's workers' share of the quota: the ledger that settles what ended jobs held, and for the upkeep
    /// leader the outbox's relay and the release of lost jobs' reservations.
    package mutating func settlingQuota(database: PostgresClient, queue: JobQueue, logger: Logger) {
        let ledger = QuotaLedger(database: database)
        self.ledger = ledger
        leaderTasks += [JobOutbox(database: database, queue: queue, logger: logger).relayTask(), ledger.lostJobsTask(queue: queue)]
    }
}
