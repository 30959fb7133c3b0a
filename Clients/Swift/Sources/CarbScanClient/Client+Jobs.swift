import Foundation
import OpenAPIRuntime

/// A job that ended without succeeding.
public struct JobFailedError: Error, CustomStringConvertible, Sendable {
    public let job: Components.Schemas.Job
    public var description: String { "job \(job.id) \(job.status.rawValue): \(job.error ?? "no reason given")" }
}

/// An answer the follow-up did not expect (the job is not the caller's, or the server is unavailable).
public struct UnexpectedAnswerError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let status: Int
    public var description: String { "\(operation) answered \(status)" }
}

/// A job that succeeded with a result of another kind than the one asked for.
public struct UnexpectedResultError: Error, CustomStringConvertible, Sendable {
    public let job: Components.Schemas.Job
    public var description: String { "job \(job.id) of kind \(job._type) has no result of the kind asked for" }
}

extension Client {
    /// Follows a 202 (`Location: /api/mobile/v1/jobs/{id}`, or the `jobId` in its body) to the job's end: long-polls
    /// `GET jobs/{id}?wait=` (30 s at a time) until it has succeeded, and returns it. Throws `JobFailedError` when
    /// the job failed (or was cancelled, or expired), `UnexpectedAnswerError` for any other answer. A status this client does
    /// not know yet counts as not finished.
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
            switch job.status.value1 {
            case .succeeded: return job
            case .failed, .cancelled, .expired: throw JobFailedError(job: job)
            case .queued, .running, .retrying, nil:
                if ContinuousClock.now >= deadline { throw CancellationError() }
            }
        }
    }

    /// Follows an `analyze` 202 to its end: the same `AnalysisResult` as its 200 (`scanUsage` as of now).
    public func waitForAnalysis(_ id: String, timeout: Duration = .seconds(120)) async throws -> Components.Schemas.AnalysisResult {
        let job = try await waitForJob(id, timeout: timeout)
        guard case .AnalysisResult(let result) = job.result?.value1 else { throw UnexpectedResultError(job: job) }
        return result
    }

    /// Follows a `chat` 202 to its end: the same `ChatAnswer` as its 200.
    public func waitForChat(_ id: String, timeout: Duration = .seconds(120)) async throws -> Components.Schemas.ChatAnswer {
        let job = try await waitForJob(id, timeout: timeout)
        guard case .ChatAnswer(let answer) = job.result?.value1 else { throw UnexpectedResultError(job: job) }
        return answer
    }

    static func status(_ output: Operations.GetJob.Output) -> Int {
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

    static func status(_ output: Operations.RefreshToken.Output) -> Int {
        switch output {
        case .ok: 200
        case .badRequest: 400
        case .unauthorized: 401
        case .contentTooLarge: 413
        case .internalServerError: 500
        case .serviceUnavailable: 503
        case .undocumented(let status, _): status
        }
    }
}
