import Foundation
import OpenAPIRuntime

/// A job that ended without succeeding.
public struct JobFailedError: Error, CustomStringConvertible, Sendable {
    public let job: Components.Schemas.Job
    public var description: String { "job \(job.id) failed: \(job.error ?? "no reason given")" }
}

/// An answer the follow-up did not expect (the job is not the caller's, or the server is unavailable).
public struct UnexpectedAnswerError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let status: Int
    public var description: String { "\(operation) answered \(status)" }
}

extension Client {
    /// Follows a 202 (`Location: /api/mobile/v1/jobs/{id}`, or the `jobId` in its body) to the job's end: long-polls
    /// `GET jobs/{id}?wait=` (30 s at a time) until it has succeeded, and returns it (its `result` holds what the sync
    /// 200 would have). Throws `JobFailedError` when the job failed (or an operator cancelled it), `UnexpectedAnswerError` for any other answer.
    public func waitForJob(_ id: String, timeout: Duration = .seconds(120)) async throws -> Components.Schemas.Job {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            let wait = max(0, min(30, Int(left.components.seconds)))
            let output = try await getJob(path: .init(id: id), query: .init(wait: wait))
            guard case .ok(let ok) = output else {
                throw UnexpectedAnswerError(operation: "GET jobs/\(id)", status: Self.status(output))
            }
            let job = try ok.body.json.value2.data
            // An open enum: a status this client does not know yet counts as not finished.
            switch job.status.value1 {
            case .succeeded: return job
            case .failed, .cancelled: throw JobFailedError(job: job)
            case .queued, .running, .retrying, nil:
                if ContinuousClock.now >= deadline { throw CancellationError() }
            }
        }
    }

    private static func status(_ output: Operations.GetJob.Output) -> Int {
        switch output {
        case .ok: 200
        case .badRequest: 400
        case .unauthorized: 401
        case .notFound: 404
        case .internalServerError: 500
        case .serviceUnavailable: 503
        case .undocumented(let status, _): status
        }
    }
}
