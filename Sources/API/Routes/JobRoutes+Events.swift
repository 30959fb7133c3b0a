import Foundation
import HTTPTypes
import Hummingbird
import JSON
import Outbox
import Queue

/// `jobs/{id}/events`: the job's event stream (WHATWG server-sent events), to its owner only.
///
/// Each event has the job's state or output: `queued`, `running`, `retrying` and the final `succeeded`, `failed`,
/// `cancelled` or `expired`, whose data is the job as `jobs/{id}` answers it (the final one with its result), and, for
/// kinds that produce output as they go, `delta` (`{"text": …}`, a chat answer's next piece) and `progress`
/// (`{"step": …}`). Every event has an id: a client that reconnects with `Last-Event-ID` gets exactly the events after
/// it. A stream for a finished job replays its events and ends; an idle one sends a comment every
/// `EVENT_STREAM_HEARTBEAT_SECONDS`; a shutdown, or `EVENT_STREAM_MAX_SECONDS`, ends it (the client reconnects,
/// maybe to another process, with `Last-Event-ID`).
extension JobRoutes {
    func events(_ request: Request, _ context: APIContext) async throws -> Response {
        let caller = try await authenticator.principal(request)
        guard let text = context.parameters.get("id"), let id = JobID(rawValue: text.lowercased()) else { throw APIError.notFound("Job") }
        let after = try Self.lastEventID(request)
        if let record = try await queue.record(id) {
            guard record.owner == caller.userID else { throw APIError.notFound("Job") }
        } else {
            // Accepted but not yet on its queue: its stream starts when the relay puts it there.
            guard let waiting = try await JobOutbox(database: database, queue: queue).waiting(id), waiting.owner == caller.userID
            else { throw APIError.notFound("Job") }
        }
        return eventStream(of: id, after: after)
    }

    /// The job's event stream as a response (also `POST chat`'s answer to `Accept: text/event-stream`).
    func eventStream(of id: JobID, after: String?, headers extra: HTTPFields = [:]) -> Response {
        var headers = extra
        headers[.contentType] = ServerSentEvents.contentType
        headers[.cacheControl] = "no-cache"
        // nginx buffers responses unless told not to; other proxies read the content type.
        headers[HTTPField.Name("X-Accel-Buffering")!] = "no"
        let stream = JobEventStream(routes: self, id: id, last: after)
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                try await stream.run(&writer)
                try await writer.finish(nil)
            })
    }

    /// `Last-Event-ID`, if the client sent one: an event id of this API (`<ms>-<seq>`).
    static func lastEventID(_ request: Request) throws -> String? {
        guard let value = request.headers[HTTPField.Name("Last-Event-ID")!]?.trimmingCharacters(in: .whitespaces), !value.isEmpty
        else { return nil }
        guard JobEventLog.isEventID(value) else {
            throw APIError.validation("Last-Event-ID", "Last-Event-ID must be an event id this stream sent (such as 1764230400000-0)")
        }
        return value
    }

    func markSeen(_ record: JobRecord) async { await waiter.markSeen(record) }
}

/// One client's stream of one job's events: reads the job's event log after the last event sent, writes what is new,
/// and waits for news (the queue's completion channel, through ``JobWaiter``) or the heartbeat.
struct JobEventStream: Sendable {
    let routes: JobRoutes
    let id: JobID
    let last: String?

    private var queue: JobQueue { routes.queue }

    func run(_ writer: inout some ResponseBodyWriter) async throws {
        let follower = routes.waiter.follow(id)
        defer { follower.end() }
        let log = JobEventLog(redis: queue.redis, prefix: queue.options.prefix)
        let heartbeat = routes.settings.eventHeartbeat
        let end = ContinuousClock.now + routes.settings.eventStreamMaxDuration
        var last = last
        var queueName: String?
        var sentStatus: JobStatus?
        try await writer.write(ServerSentEvents.retry(.seconds(2)))
        while true {
            var wait = heartbeat
            if queueName == nil {
                queueName = try await queue.record(id)?.queue
                // A handler that can stream its output (a chat) does so for a followed job.
                if let queueName { try? await log.markFollowed(id, queue: queueName) }
            }
            if let queueName {
                let events = try await log.events(of: id, queue: queueName, after: last)
                for event in events {
                    try await writer.write(try await text(of: event))
                    last = event.id
                    if event.status?.isFinal == true { return }
                }
                if events.count == 100 { continue }
                if events.isEmpty {
                    // Nothing new: the job keeps no log (its kind has no `events: true`) or the log has expired, or it
                    // simply has nothing to say yet.
                    guard let record = try await queue.record(id) else { return }
                    if record.status.isFinal {
                        // A log ends with the end: read it (it was written after this read of the log), unless the client
                        // has it already. Without a log (or one that lost its end) the record says it.
                        if let tail = try await log.lastEvent(of: id, queue: queueName), tail.status?.isFinal == true {
                            // The client has it (or named an id past it): nothing more will come.
                            if let last, !JobEventLog.isEvent(tail.id, after: last) { return }
                            continue
                        }
                        try await writer.write(try await finalEvent(record, id: nil))
                        return
                    }
                    if last == nil {
                        // No log: its state as it changes, read on each wake-up and at least every second.
                        if record.status != sentStatus {
                            try await writer.write(
                                ServerSentEvents.event(id: nil, name: record.status.rawValue, data: try json(JobRoutes.Job(record))))
                            sentStatus = record.status
                        }
                        wait = min(wait, .seconds(1))
                    }
                }
            } else {
                // Still in the outbox: the relay enqueues it within seconds.
                wait = min(wait, .seconds(1))
            }
            let left = end - .now
            // Past its longest life the stream ends; the client reconnects (with `Last-Event-ID`), maybe elsewhere.
            if left <= .zero { return }
            switch await follower.next(timeout: min(wait, left)) {
            case .news: continue
            case .timeout: if wait == heartbeat && .now < end { try await writer.write(ServerSentEvents.heartbeat) }
            case .stopped: return
            }
        }
    }

    /// An event of the log as the client reads it.
    private func text(of event: JobEvent) async throws -> String {
        guard let status = event.status else {
            let data = JSONValue.object(event.fields.mapValues(JSONValue.string))
            return ServerSentEvents.event(id: event.id, name: event.type, data: data.jsonString)
        }
        guard let record = try await queue.record(id) else {
            return ServerSentEvents.event(
                id: event.id, name: status.rawValue, data: #"{"id":"\#(id.rawValue)","status":"\#(status.rawValue)"}"#)
        }
        if status.isFinal { return try await finalEvent(record, id: event.id) }
        // The record may be ahead of the event (a replay): the job as it was then, its state and attempt.
        var job = JobRoutes.Job(record)
        job.status = status.rawValue
        job.attempts = event.fields["attempt"].flatMap(Int.init) ?? job.attempts
        job.result = nil
        job.finishedAt = nil
        if status != .retrying { job.error = nil }
        if status == .queued { job.startedAt = nil }
        return ServerSentEvents.event(id: event.id, name: status.rawValue, data: try json(job))
    }

    /// The last event: the job as `jobs/{id}` answers it, result included. Sending it marks the job's end as seen.
    private func finalEvent(_ record: JobRecord, id: String?) async throws -> String {
        let text = ServerSentEvents.event(id: id, name: record.status.rawValue, data: try json(try await routes.answer(record)))
        await routes.markSeen(record)
        return text
    }

    private func json(_ job: JobRoutes.Job) throws -> String {
        String(decoding: try StreamingJSONEncoder.api.encode(job), as: UTF8.self)
    }
}
