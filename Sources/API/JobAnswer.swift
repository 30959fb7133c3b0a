import Foundation
import HTTPTypes
import Hummingbird
import Queue

/// How long the seed's synchronous endpoints wait for their job, and the scan reset zone (the scheduler's).
struct ResultSettings: Sendable {
    var syncWait: Duration
    var scanResetTimeZone: TimeZone
    /// How often an idle event stream sends a heartbeat comment.
    var eventHeartbeat: Duration = .seconds(15)
    /// How long one event stream lasts at most (the client resumes with `Last-Event-ID`).
    var eventStreamMaxDuration: Duration = .seconds(600)
}

/// The answer of an endpoint that runs a job: the finished job's own body (200) when it finishes within the
/// wait, 202 with the job otherwise or when the client sent `Prefer: respond-async` (RFC 7240), and 502 with the
/// reason when the job failed.
enum JobAnswer {
    struct Accepted: Encodable {
        var jobId: String
        var status: String
    }

    static func respond(
        _ request: Request, job id: JobID, waiter: JobWaiter, settings: ResultSettings,
        succeeded: (JobRecord) async throws -> Response
    ) async throws -> Response {
        let preferAsync = request.headers[values: .prefer].contains { $0.lowercased().contains("respond-async") }
        var status: String?
        var waited: JobRecord?
        do {
            if !preferAsync { waited = try await waiter.wait(for: id, timeout: settings.syncWait) }
        } catch  where APIError.isOutage(error) {
            // The job was accepted before Redis went away: the client gets it (202), not a 503 that would make it ask
            // again and enqueue a second job.
            status = "queued"
        }
        if let record = waited {
            status = record.status.rawValue
            if record.status.isFinal { await waiter.markSeen(record) }
            switch record.status {
            case .succeeded:
                return try await succeeded(record)
            case .failed:
                throw APIError(
                    .badGateway, "JOB_FAILED", "The job failed: \(record.error ?? "unknown reason")",
                    details: ["jobId": .string(id.rawValue)])
            case .cancelled:
                // The endpoints document 502 for a job that did not produce its answer.
                throw APIError(
                    .badGateway, "JOB_CANCELLED", "The job was cancelled by an operator", details: ["jobId": .string(id.rawValue)])
            case .expired:
                throw APIError(
                    .badGateway, "JOB_EXPIRED", "The job was not started in time and will not run", details: ["jobId": .string(id.rawValue)]
                )
            default:
                break
            }
        }
        var headers = HTTPFields()
        headers[.location] = "\(RouteTable.basePath)/jobs/\(id.rawValue)"
        // The wait's last read says where the job stands; only an immediate 202 needs a read of its own.
        if status == nil { status = (try? await waiter.currentStatus(id)) ?? nil }
        return try Envelope.success(Accepted(jobId: id.rawValue, status: status ?? "queued"), status: .accepted, headers: headers)
    }
}

extension JobAnswer {
    /// Whether the client reads event streams at all (`Accept` lists `text/event-stream` with a quality above 0).
    static func acceptsEventStream(_ request: Request) -> Bool {
        acceptedQualities(request).stream > 0
    }

    /// Whether the client prefers the job's event stream (`Accept: text/event-stream`) to the JSON answer: it must rank
    /// the stream above JSON (`application/json`, or a wildcard that covers it). A client that accepts both equally
    /// (the generated client sends `application/json, text/event-stream`) gets the seed's JSON.
    static func wantsEventStream(_ request: Request) -> Bool {
        let accepted = acceptedQualities(request)
        return accepted.stream > accepted.json
    }

    /// The highest quality (`q`, default 1) `Accept` gives the event stream and JSON (itself or a wildcard covering it).
    private static func acceptedQualities(_ request: Request) -> (stream: Double, json: Double) {
        var stream = 0.0
        var json = 0.0
        for range in request.headers[values: .accept].flatMap({ $0.split(separator: ",") }) {
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            switch parts.first ?? "" {
            case "text/event-stream": stream = max(stream, quality)
            case "application/json", "application/*", "*/*": json = max(json, quality)
            default: break
            }
        }
        return (stream, json)
    }
}

extension HTTPField.Name {
    static let prefer = HTTPField.Name("Prefer")!
}
