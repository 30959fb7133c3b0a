import Foundation
import OpenAPIRuntime

/// One event of a job's stream (`GET jobs/{id}/events`).
public struct JobStreamEvent: Sendable {
    /// The event's id: what a reconnection sends as `Last-Event-ID`.
    public var id: String?
    /// `queued`, `running`, `retrying`, a final status (`succeeded`, `failed`, `cancelled`, `expired`), `delta` or
    /// `progress` (or a name a later server adds).
    public var name: String
    /// The event's data: JSON.
    public var data: String

    /// The job as the event tells it, for a state event (nil for `delta` and `progress`).
    public var job: Components.Schemas.Job? {
        guard name != "delta", name != "progress" else { return nil }
        return try? Self.decoder.decode(Components.Schemas.Job.self, from: Data(data.utf8))
    }

    /// A `delta` event's text: the next piece of a chat answer.
    public var text: String? { name == "delta" ? field("text") : nil }

    /// A `progress` event's step (`image_received`, `model_asked`, `answer_parsed`).
    public var step: String? { name == "progress" ? field("step") : nil }

    /// Whether the job has ended with this event (the stream ends after it).
    public var isFinal: Bool { ["succeeded", "failed", "cancelled", "expired"].contains(name) }

    private func field(_ name: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])?[name] as? String
    }

    private static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = try? Date(text, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date: \(text)")
            }
            return date
        }
        return decoder
    }
}

extension Client {
    /// Follows a job's event stream to its end, as an app does after a 202: each event is handed to `onEvent` once, in
    /// order (a chat's `delta` events are its answer as the model writes it). When the connection ends before the job
    /// has (the network dropped, the server's longest stream life passed, a deploy), it reconnects with
    /// `Last-Event-ID` and gets exactly the events after the last one it had. Returns the job as its final event tells
    /// it; throws ``UnexpectedAnswerError`` for an answer that is not a stream (the job is not the caller's).
    public func followJob(
        _ id: String, after lastEventID: String? = nil, timeout: Duration = .seconds(120),
        onEvent: (JobStreamEvent) async throws -> Void = { _ in }
    ) async throws -> Components.Schemas.Job {
        let deadline = ContinuousClock.now + timeout
        var last = lastEventID
        while ContinuousClock.now < deadline {
            let output = try await getJobEvents(path: .init(id: id), headers: .init(lastEventID: last))
            guard case .ok(let ok) = output else {
                throw UnexpectedAnswerError(operation: "GET jobs/\(id)/events", status: Self.status(output))
            }
            do {
                for try await event in try ok.body.textEventStream.asDecodedServerSentEvents() {
                    // A block without data (the stream's `retry:` advice) is no event (WHATWG: not dispatched).
                    guard let data = event.data else { continue }
                    let received = JobStreamEvent(id: event.id, name: event.event ?? "message", data: data)
                    if let id = event.id { last = id }
                    try await onEvent(received)
                    if received.isFinal, let job = received.job { return job }
                }
            } catch let error as CancellationError {
                throw error
            } catch {
                // A connection cut mid-event: resume after the last whole one.
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw CancellationError()
    }

    static func status(_ output: Operations.GetJobEvents.Output) -> Int {
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
