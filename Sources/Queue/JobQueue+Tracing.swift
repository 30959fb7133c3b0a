import JSON
import Traces

/// The queue's spans, named and described as OpenTelemetry's messaging conventions say: a producer span per enqueue
/// (`send <queue>`) whose context travels in the job's record, and a consumer span per attempt (`process <queue>`,
/// see `Worker`) that continues it. `messaging.system` is `carbscan`: the conventions list no value for a queue built
/// on Redis streams, and the system is ours.
enum MessagingSpan {
    static let system = "carbscan"

    /// The attributes both kinds share, first in a span's `SpanFields` (sized for the ones each kind adds).
    static func fields(queue: String, operation: String, job: JobID?, kind: String, capacity: Int) -> SpanFields {
        var fields = SpanFields(capacity: capacity)
        fields.append("messaging.system", .string(system))
        fields.append("messaging.operation.type", .string(operation))
        fields.append("messaging.operation.name", .string(operation))
        fields.append("messaging.destination.name", .string(queue))
        if let job { fields.append("messaging.message.id", .string(job.rawValue)) }
        fields.append("carbscan.job.kind", .string(kind))
        return fields
    }
}

extension JobQueue {
    /// `enqueue` as a producer span of the current trace; the job carries the span's context.
    func tracedEnqueue(_ kind: String, payload: JSONValue, options: EnqueueOptions) async throws -> EnqueueResult {
        let queue = catalog[kind]?.queue ?? kind
        return try await TraceSwitch.withSpan("send \(queue)", ofKind: .producer) { span in
            let id = options.id ?? .random()
            span.set(MessagingSpan.fields(queue: queue, operation: "send", job: id, kind: kind, capacity: 8))
            let result = try await enqueueOne(kind, payload: payload, options: options, id: id, trace: TraceCarrier.current())
            switch result {
            case .enqueued: break
            case .duplicate(let holder):
                span.set("carbscan.enqueue.outcome", "duplicate")
                if let holder { span.set("carbscan.enqueue.duplicate_of", .string(holder.rawValue)) }
            case .alreadyFired:
                span.set("carbscan.enqueue.outcome", "already_fired")
            }
            return result
        }
    }
}
