import Foundation
import Hummingbird
import JSON
import Queue

/// `jobs/{id}[?wait=N]`: a job's status and result, to its owner only (`DELETE` cancels it); anyone else's job, or no job, is
/// `NOT_FOUND` (the same answer, so ids cannot be probed). `wait` (seconds, ≤ 30) long-polls until the job
/// finishes.
struct JobRoutes {
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator

    func register(on api: RouteTable) {
        api.get("jobs/:id", show)
        api.delete("jobs/:id", cancel)
    }

    struct Job: Encodable {
        var id: String
        var type: String
        var status: String
        var attempts: Int
        var result: JSONValue?
        var error: String?
        var enqueuedAt: Date
        var startedAt: Date?
        var finishedAt: Date?
    }

    func show(_ request: Request, _ context: APIContext) async throws -> Response {
        let caller = try await authenticator.principal(request)
        let wait = try request.integer("wait", default: 0, in: 0...30)
        guard let text = context.parameters.get("id"), let id = JobID(rawValue: text.lowercased()),
            var record = try await queue.record(id), record.owner == caller.userID
        else { throw APIError.notFound("Job") }
        if wait > 0, record.status != .succeeded, record.status != .failed, record.status != .cancelled,
            let finished = try await waiter.wait(for: id, timeout: .seconds(wait))
        {
            record = finished
        }
        return try Envelope.success(Job(record))
    }

    /// `DELETE jobs/{id}`: the owner cancels a job. A waiting one never runs (200, now `cancelled`); a running one's
    /// worker is told to cancel it (202, as it stands); a finished one is 409 `JOB_FINISHED`. What it reserved (a scan,
    /// a chat) is given back by photo-retention's sweep, as a dead job's is.
    func cancel(_ request: Request, _ context: APIContext) async throws -> Response {
        let caller = try await authenticator.principal(request)
        guard let text = context.parameters.get("id"), let id = JobID(rawValue: text.lowercased()),
            let record = try await queue.record(id), record.owner == caller.userID
        else { throw APIError.notFound("Job") }
        let result: CancelResult
        do {
            result = try await queue.cancel(id)
        } catch let error as QueueError where error.code == .alreadyFinished {
            throw APIError(
                .conflict, "JOB_FINISHED", "The job already finished",
                details: ["jobId": .string(id.rawValue), "status": .string(record.status.rawValue)])
        } catch let error as QueueError where error.code == .notFound {
            throw APIError.notFound("Job")
        }
        guard let now = try await queue.record(id) else { throw APIError.notFound("Job") }
        if case .running = result { return try Envelope.success(Job(now), status: .accepted) }
        return try Envelope.success(Job(now))
    }
}

extension JobRoutes.Job {
    /// A dead job reads as failed to clients; the operator CLI shows the dead set.
    init(_ record: JobRecord) {
        self.init(
            id: record.id.rawValue, type: record.kind, status: record.status.rawValue, attempts: record.attempts,
            result: record.result.flatMap { try? JSONValue(parsing: $0) } ?? record.result.map(JSONValue.string),
            error: record.error, enqueuedAt: record.enqueuedAt, startedAt: record.startedAt, finishedAt: record.finishedAt)
    }
}
