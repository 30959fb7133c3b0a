import Foundation
import JSON
import Logging
import Queue

/// Enqueues a `push` job (jobs/push.yml) when an analysis or chat ends in this worker (succeeded, failed for good, or
/// expired), so the owner's devices hear of it. The push waits ``delay`` before it runs and checks then whether a
/// request of the owner was answered with the end (``ResultSeen``): an app that waited for the answer or followed the
/// job's event stream gets no push.
///
/// One push job per job, also across a redelivery: its id is derived from the job's (``pushID(of:)``), and an enqueue of
/// an id whose record lives is a no-op. A worker that dies between the end and this enqueue sends none (at most once).
package struct PushTrigger: WorkerObserver {
    /// The kinds whose ends are pushed.
    static let kinds: Set<String> = [AnalysisJob.name, ChatJob.name]
    /// Long enough for the API to answer a waiting request and mark it (milliseconds after the end, normally).
    static let delay: Duration = .seconds(2)
    package static let pushKind = "push"

    let queue: JobQueue
    let logger: Logger

    package init(queue: JobQueue, logger: Logger) {
        self.queue = queue
        self.logger = logger
    }

    package func jobStarted(kind: String, queue: String) {}
    package func jobFinished(kind: String, queue: String, outcome: JobEnd, duration: Duration) {}

    package func jobEnded(_ job: ReservedJob, outcome: JobEnd) {
        guard Self.kinds.contains(job.kind), let status = Self.status(of: outcome),
            case .string(let userID) = (try? JSONValue(parsing: job.payload))?["userId"]
        else { return }
        let payload: JSONValue = [
            "jobId": .string(job.id.rawValue), "queue": .string(job.queue), "kind": .string(job.kind), "userId": .string(userID),
            "status": .string(status),
        ]
        let queue = queue
        let logger = logger
        Task {
            do {
                _ = try await queue.enqueue(Self.pushKind, payload: payload, options: .init(delay: Self.delay, id: Self.pushID(of: job.id)))
            } catch {
                logger.warning("push not enqueued", metadata: ["job": "\(job.id)", "error": "\(error)"])
            }
        }
    }

    /// The status a push names, for the ends that are pushed.
    static func status(of outcome: JobEnd) -> String? {
        switch outcome {
        case .succeeded: "succeeded"
        case .dead: "failed"
        case .expired: "expired"
        case .retried, .postponed, .handedBack, .cancelled: nil
        }
    }

    /// The push job's id for job `id`: the same for every end of the job, distinct for distinct jobs (the id's bytes
    /// XOR a fixed mask that leaves the version and variant bits alone, a bijection on random UUIDs).
    package static func pushID(of id: JobID) -> JobID {
        let mask: [UInt8] = [0x5a, 0x17, 0xc3, 0x9e, 0x21, 0x6b, 0x0d, 0xe4, 0x34, 0x88, 0x7f, 0x12, 0xa9, 0x46, 0xbe, 0x03]
        guard let uuid = UUID(uuidString: id.rawValue) else { return .random() }
        var bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
        for index in bytes.indices { bytes[index] ^= mask[index] }
        let mixed = bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        return JobID(rawValue: mixed.uuidString) ?? .random()
    }
}
