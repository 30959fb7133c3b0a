import Foundation
import Traces

/// Where a job stands, as clients and operators see it.
public enum JobStatus: String, Sendable, Codable, CaseIterable {
    case queued, running, retrying, succeeded, failed
    /// Cancelled by an operator (or its owner): it will not run (again).
    case cancelled
    /// Not started by its kind's `start_by` time: it did not run, and what it reserved was given back.
    case expired

    /// Whether the job has ended: it will not change again.
    public var isFinal: Bool { self == .succeeded || self == .failed || self == .cancelled || self == .expired }
}

/// One failed attempt, kept with the job (the last ten).
public struct AttemptError: Sendable, Codable, Equatable {
    public var attempt: Int
    public var at: Date
    public var error: String
}

/// A job's record as stored in Redis: what `jobs show` and `GET /jobs/{id}` report.
public struct JobRecord: Sendable, Codable, Equatable {
    public var id: JobID
    public var queue: String
    public var kind: String
    public var status: JobStatus
    public var attempts: Int
    public var maxAttempts: Int
    public var payload: String
    public var result: String?
    public var error: String?
    public var errors: [AttemptError]
    public var enqueuedAt: Date
    public var startedAt: Date?
    public var finishedAt: Date?
    /// When a delayed job or a retry is due.
    public var runAt: Date?
    /// The cron fire time that enqueued it.
    public var scheduledFor: Date?
    public var uniqueKey: String?
    /// The worker (consumer) that last started it.
    public var worker: String?
    /// Who enqueued it (`EnqueueOptions.owner`), if anyone said.
    public var owner: String?
    /// Whether it sits in the dead set (it can be retried by hand).
    public var inDeadSet: Bool
    /// The trace its producer started (32 hex digits), when the producer traced: every attempt is a span of it.
    public var traceID: String?

    init?(id: JobID, queue: String, fields: [String: String], inDeadSet: Bool) {
        // A queued job's record has no status yet (one field less to write per job at enqueue).
        guard let kind = JobField.kind.of(fields), let status = JobStatus(rawValue: JobField.status.of(fields) ?? JobStatus.queued.rawValue)
        else { return nil }
        func date(_ field: JobField) -> Date? {
            field.of(fields).flatMap(Double.init).map { Date(timeIntervalSince1970: $0 / 1000) }
        }
        self.id = id
        self.queue = queue
        self.kind = kind
        self.status = status
        self.attempts = JobField.attempts.of(fields).flatMap(Int.init) ?? 0
        self.maxAttempts = JobField.maxAttempts.of(fields).flatMap(Int.init) ?? 0
        self.payload = JobField.payload.of(fields) ?? "{}"
        self.result = JobField.result.of(fields)
        self.error = JobField.error.of(fields)
        self.errors = Self.decodeHistory(JobField.errors.of(fields))
        self.enqueuedAt = date(.enqueuedMs) ?? Date(timeIntervalSince1970: 0)
        self.startedAt = date(.startedMs)
        self.finishedAt = date(.finishedMs)
        self.runAt = status == .queued || status == .retrying ? date(.runAtMs) : nil
        self.scheduledFor = date(.fireMs)
        self.uniqueKey = JobField.unique.of(fields)
        self.worker = JobField.worker.of(fields)
        self.owner = JobField.owner.of(fields)
        self.inDeadSet = inDeadSet
        self.traceID = TraceCarrier.traceID(of: JobField.trace.of(fields))
    }

    private static func decodeHistory(_ text: String?) -> [AttemptError] {
        struct Raw: Decodable {
            var attempt: Int
            var at: Double
            var error: String
        }
        guard let data = text?.data(using: .utf8), let raw = try? JSONDecoder().decode([Raw].self, from: data) else { return [] }
        return raw.map { AttemptError(attempt: $0.attempt, at: Date(timeIntervalSince1970: $0.at / 1000), error: $0.error) }
    }
}
