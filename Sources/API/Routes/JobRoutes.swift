import Foundation
import Hummingbird
import JSON
import Queue

/// `jobs/{id}[?wait=N]`: a job's status and result, to its owner only; anyone else's job, or no job, is
/// `NOT_FOUND` (the same answer, so ids cannot be probed). `wait` (seconds, ≤ 30) long-polls until the job
/// finishes.
struct JobRoutes {
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator

    func register(on api: RouteTable) {
        api.get("jobs/:id", show)
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
        if wait > 0, record.status != .succeeded, record.status != .failed,
            let finished = try await waiter.wait(for: id, timeout: .seconds(wait))
        {
            record = finished
        }
        // A dead job reads as failed to clients; the operator CLI shows the dead set.
        let status = record.status.rawValue
        return try Envelope.success(
            Job(
                id: id.rawValue, type: record.kind, status: status, attempts: record.attempts,
                result: record.result.flatMap { try? JSONValue(parsing: $0) } ?? record.result.map(JSONValue.string),
                error: record.error, enqueuedAt: record.enqueuedAt, startedAt: record.startedAt, finishedAt: record.finishedAt))
    }
}
