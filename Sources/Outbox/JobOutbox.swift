import Foundation
import JSON
import Logging
import Postgres
import Queue

/// Transactional enqueue with a Redis queue (River and Oban get it from living in Postgres): a producer writes the job
/// to `job_outbox` in the same Postgres transaction as the rows that need it, so both commit or neither does; after
/// the commit it ``deliver(_:)``s the job to Redis at once (the fast path) and deletes the row. A row a crash left
/// behind (after the commit, before the enqueue or the delete) is delivered by ``relay(olderThan:limit:)``, which the
/// upkeep leader runs. Each job is enqueued with its own id (``EnqueueOptions/id``), so delivering a row twice, from
/// both paths or after a crash between the enqueue and the delete, makes one job.
package struct JobOutbox: Sendable {
    let database: PostgresClient
    let queue: JobQueue
    let logger: Logger

    package init(database: PostgresClient, queue: JobQueue, logger: Logger = Logger(label: "outbox")) {
        self.database = database
        self.queue = queue
        self.logger = logger
    }

    /// One job on its way to its queue.
    package struct Job: Sendable {
        package var id: JobID
        package var kind: String
        package var payload: JSONValue
        package var owner: String?
        package var reservation: String?

        package init(id: JobID = .random(), kind: String, payload: JSONValue, owner: String? = nil, reservation: String? = nil) {
            self.id = id
            self.kind = kind
            self.payload = payload
            self.owner = owner
            self.reservation = reservation
        }

        package init<C: JobContract>(
            id: JobID = .random(), _ contract: C.Type, _ parameters: C.Parameters, owner: String? = nil, reservation: String? = nil
        ) throws {
            self.init(id: id, kind: C.name, payload: try C.payload(parameters), owner: owner, reservation: reservation)
        }

        var options: EnqueueOptions { EnqueueOptions(owner: owner, id: id, reservation: reservation) }
    }

    /// Writes `job` in the caller's transaction `tx`, after checking it as an enqueue would (an unknown kind or a
    /// payload its schema refuses throws here, before anything commits).
    package func add(_ job: Job, in tx: any PostgresQueryable) async throws {
        try queue.validate(job.kind, payload: job.payload)
        try await tx.execute(
            "INSERT INTO job_outbox (job_id, kind, payload, owner, reservation) VALUES ($1::uuid, $2, $3, $4, $5)",
            [job.id.rawValue, job.kind, job.payload.jsonString, job.owner, job.reservation])
    }

    /// The fast path, after the commit: enqueues the job and deletes its row. Returns false when Redis or Postgres
    /// failed (logged): the row stays and the relay delivers it; the job is accepted either way.
    @discardableResult
    package func deliver(_ job: Job) async -> Bool {
        do {
            try await enqueue(job)
            try await database.execute("DELETE FROM job_outbox WHERE job_id = $1::uuid", [job.id.rawValue])
            return true
        } catch {
            logger.warning(
                "job left in the outbox for the relay", metadata: ["job": "\(job.id)", "kind": "\(job.kind)", "error": "\(error)"])
            return false
        }
    }

    /// Enqueued now, or already (`.duplicate` of itself); a job has no cron fire, so nothing else can come back.
    private func enqueue(_ job: Job) async throws {
        _ = try await queue.enqueue(job.kind, payload: job.payload, options: job.options)
    }

    /// Delivers rows older than `age` (their producer's fast path failed or it died), oldest first, up to `limit`:
    /// how many. A row whose payload no longer passes its kind's schema (the job file changed) is logged and dropped.
    @discardableResult
    package func relay(olderThan age: Duration = .seconds(5), limit: Int = 500) async throws -> Int {
        let rows = try await database.query(
            """
            SELECT job_id::text AS job_id, kind, payload, owner, reservation FROM job_outbox
            WHERE created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT $2
            """,
            [Double(age.milliseconds) / 1000, limit])
        var delivered = 0
        for row in rows {
            let text: String = try row.decode("job_id")
            guard let id = JobID(rawValue: text) else { continue }
            let payload = try JSONValue(parsing: try row.decode("payload") as String)
            let job = Job(
                id: id, kind: try row.decode("kind"), payload: payload, owner: try row.decode("owner"),
                reservation: try row.decode("reservation"))
            do {
                try await enqueue(job)
            } catch let error as QueueError where error.code == .invalidPayload || error.code == .unknownKind {
                logger.error("outbox job dropped: the queue refuses it", metadata: ["job": "\(id)", "error": "\(error)"])
            }
            try await database.execute("DELETE FROM job_outbox WHERE job_id = $1::uuid", [text])
            delivered += 1
        }
        if delivered > 0 { logger.warning("relayed jobs a producer left in the outbox", metadata: ["count": "\(delivered)"]) }
        return delivered
    }

    /// The relay as a task of the upkeep leader (``WorkerOptions/leaderTasks``).
    package func relayTask(every interval: Duration = .seconds(1), olderThan age: Duration = .seconds(5)) -> LeaderTask {
        LeaderTask("relaying the job outbox", every: interval) { _ = try await relay(olderThan: age) }
    }

    /// A job still in the outbox (accepted, not yet on its queue): its kind, owner and when it was accepted.
    package func waiting(_ id: JobID) async throws -> (kind: String, owner: String?, acceptedAt: Date)? {
        let rows = try await database.query(
            "SELECT kind, owner, created_at FROM job_outbox WHERE job_id = $1::uuid", [id.rawValue])
        guard let row = rows.first else { return nil }
        return (try row.decode("kind"), try row.decode("owner"), try row.decode("created_at"))
    }
}
