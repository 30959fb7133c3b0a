import Foundation
import Hummingbird
import JSON
import JobContracts
import Outbox
import Postgres
import Queue

/// `jobs/{id}[?wait=N]`: a job's status and result, to its owner only (`DELETE` cancels it); anyone else's job, or no job, is
/// `NOT_FOUND` (the same answer, so ids cannot be probed). `wait` (seconds, ≤ 30) long-polls until the job
/// finishes. A succeeded `analysis` or `chat` job's result is what `POST analyze` or `POST chat` would have answered.
struct JobRoutes {
    let database: PostgresClient
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator
    let settings: ResultSettings

    func register(on api: RouteTable) {
        api.get("jobs/:id", show)
        api.get("jobs/:id/events", events)
        api.delete("jobs/:id", cancel)
    }

    struct Job: Encodable {
        var id: String
        var type: String
        var status: String
        var attempts: Int
        var result: Result?
        var error: String?
        var enqueuedAt: Date
        var startedAt: Date?
        var finishedAt: Date?

        /// What a job returned, as the app reads it.
        enum Result: Encodable {
            /// The JSON its handler returned (text that is not JSON as a string): any kind the app has no type for.
            case stored(JSONValue)
            case analysis(AnalyzeRoutes.Result)
            case chat(ChatRoutes.Answer)

            func encode(to encoder: any Encoder) throws {
                switch self {
                case .stored(let value): try value.encode(to: encoder)
                case .analysis(let result): try result.encode(to: encoder)
                case .chat(let answer): try answer.encode(to: encoder)
                }
            }
        }
    }

    func show(_ request: Request, _ context: APIContext) async throws -> Response {
        let caller = try await authenticator.principal(request)
        let wait = try request.integer("wait", default: 0, in: 0...30)
        guard let text = context.parameters.get("id"), let id = JobID(rawValue: text.lowercased()) else { throw APIError.notFound("Job") }
        guard var record = try await queue.record(id) else {
            // Accepted but not yet on its queue (the relay puts it there): queued, as far as the client can tell.
            guard let waiting = try await JobOutbox(database: database, queue: queue).waiting(id), waiting.owner == caller.userID
            else { throw APIError.notFound("Job") }
            return try Envelope.success(
                Job(id: id.rawValue, type: waiting.kind, status: "queued", attempts: 0, enqueuedAt: waiting.acceptedAt))
        }
        guard record.owner == caller.userID else { throw APIError.notFound("Job") }
        if wait > 0, !record.status.isFinal,
            let finished = try await waiter.wait(for: id, timeout: .seconds(wait))
        {
            record = finished
        }
        if record.status.isFinal { await markSeen(record) }
        return try Envelope.success(try await answer(record))
    }

    /// The job with a succeeded analysis's or chat's result in the shape of its endpoint's 200, so the 202 + poll path
    /// gives an app the same types as the sync answer: the analysis's `scanUsage` is read now, as the sync answer reads
    /// it when its job ends.
    func answer(_ record: JobRecord) async throws -> Job {
        var job = Job(record)
        guard record.status == .succeeded, let owner = record.owner else { return job }
        switch record.kind {
        case AnalysisContract.name:
            if let result = try? record.result(as: AnalysisContract.self) {
                job.result = .analysis(try await AnalyzeRoutes.Result(result, userID: owner, database: database, settings: settings))
            }
        case ChatContract.name:
            // A chat answered before usage was stored (nil) keeps what it stored: its usage is not known any more.
            if let stored = try? record.result(as: ChatContract.self), let usage = stored.usage {
                job.result = .chat(ChatRoutes.Answer(stored, usage: usage))
            }
        default:
            break
        }
        return job
    }

    /// `DELETE jobs/{id}`: the owner cancels a job. A waiting one never runs (200, now `cancelled`); a running one's
    /// worker is told to cancel it (202, as it stands); a finished one is 409 `JOB_FINISHED`. What it reserved (a scan,
    /// a chat) is given back by the queue as it records the cancel, as a dead job's is.
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
            result: (record.result.flatMap { try? JSONValue(parsing: $0) } ?? record.result.map(JSONValue.string)).map(Result.stored),
            error: record.error, enqueuedAt: record.enqueuedAt, startedAt: record.startedAt, finishedAt: record.finishedAt)
    }
}
