import JSON
import Traces

/// The queue's spans, named and described as OpenTelemetry's messaging conventions say: a producer span per enqueue
/// (`send <queue>`) whose context travels in the job's record, and a consumer span per attempt (`process <queue>`,
/// see `Worker`) that continues it. `messaging.system` is `carbscan`: the conventions list no value for a queue built
/// on Redis streams, and the system is ours.
enum MessagingSpan {
    static let system = "carbscan"

    /// Written into a dictionary sized once and handed to the span whole: set one by one on the span's
    /// `SpanAttributes`, each went through its existential setter and the dictionary grew three times (a third of a
    /// no-op job's span in the worker, perf 2026-11-28).
    static func attributes(
        queue: String, operation: String, job: JobID?, kind: String, into attributes: inout [String: SpanAttribute]
    ) {
        attributes["messaging.system"] = .string(system)
        attributes["messaging.operation.type"] = .string(operation)
        attributes["messaging.operation.name"] = .string(operation)
        attributes["messaging.destination.name"] = .string(queue)
        if let job { attributes["messaging.message.id"] = .string(job.rawValue) }
        attributes["carbscan.job.kind"] = .string(kind)
    }
}

extension JobQueue {
    /// `enqueue` as a producer span of the current trace; the job carries the span's context.
    func tracedEnqueue(_ kind: String, payload: JSONValue, options: EnqueueOptions) async throws -> EnqueueResult {
        let queue = catalog[kind]?.queue ?? kind
        return try await TraceSwitch.withSpan("send \(queue)", ofKind: .producer) { span in
            let id = options.id ?? .random()
            if span.isRecording {
                var attributes = [String: SpanAttribute](minimumCapacity: 8)
                MessagingSpan.attributes(queue: queue, operation: "send", job: id, kind: kind, into: &attributes)
                span.attributes = SpanAttributes(attributes)
            }
            let result = try await enqueueOne(kind, payload: payload, options: options, id: id, trace: TraceCarrier.current())
            switch result {
            case .enqueued: break
            case .duplicate(let holder):
                span.attributes["carbscan.enqueue.outcome"] = "duplicate"
                if let holder { span.attributes["carbscan.enqueue.duplicate_of"] = holder.rawValue }
            case .alreadyFired:
                span.attributes["carbscan.enqueue.outcome"] = "already_fired"
            }
            return result
        }
    }
}
