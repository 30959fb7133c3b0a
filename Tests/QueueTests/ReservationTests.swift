import Foundation
import JSON
import Queue
import Synchronization
import TestSupport
import Testing

/// A job's reservation is settled by the queue: the script that records the job's end notes what it owes (`charge`
/// on success, `release` on death or cancellation) on the queue's settlements stream, and the upkeep leader hands
/// those to the ledger. A producer's own id makes an enqueue idempotent.
@Suite struct ReservationTests {
    /// A ledger that keeps what it is handed; it refuses its first `failFirst` batches, as Postgres away would.
    final class RecordingLedger: ReservationLedger {
        let received = Mutex<[Settlement]>([])
        let failures: Mutex<Int>

        init(failFirst: Int = 0) { failures = Mutex(failFirst) }

        func settle(_ settlements: [Settlement]) async throws {
            struct Unavailable: Error {}
            if failures.withLock({ left in
                defer { left = max(0, left - 1) }
                return left > 0
            }) {
                throw Unavailable()
            }
            received.withLock { $0 += settlements }
        }

        var settled: [Settlement] { received.withLock { $0 } }
    }

    func owed(_ env: TestEnvironment) async throws -> [String: Settlement.Outcome] {
        var owed: [String: Settlement.Outcome] = [:]
        for queue in env.queue.allShards {
            for entry in try await env.queue.settlements(queue: queue, limit: 100) {
                let settlement = try #require(entry.settlement)
                #expect(owed[settlement.reservation] == nil, "settled twice: \(settlement.reservation)")
                owed[settlement.reservation] = settlement.outcome
            }
        }
        return owed
    }

    @Test(arguments: TestServices.redisURLs) func everyEndOfAJobThatHoldsSomethingNotesOneSettlement(redisURL: String) async throws {
        let env = try TestEnvironment(redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        func enqueue(_ payload: JSONValue, holding reservation: String?, delay: Duration? = nil) async throws -> JobID {
            try await env.enqueue(payload, options: EnqueueOptions(delay: delay, reservation: reservation))
        }
        let (worker, task) = env.startWorker()
        let succeeded = try await enqueue(.object([:]), holding: "scan:1")
        let permanent = try await enqueue(["fail": "permanent"], holding: "scan:2")
        let exhausted = try await enqueue(["fail": "retry"], holding: "scan:3")
        let plain = try await enqueue(.object([:]), holding: nil)
        let scheduled = try await enqueue(.object([:]), holding: "scan:4", delay: .seconds(60))
        #expect(try await env.queue.cancel(scheduled) == .scheduled)
        #expect(
            try await eventually {
                for id in [succeeded, permanent, exhausted, plain] {
                    guard let status = try await env.status(id), status != .queued, status != .running, status != .retrying else {
                        return false
                    }
                }
                return true
            })
        worker.stop()
        try await task.value
        // No ledger in this worker: the settlements wait in Redis, one per end, none for a job that holds nothing.
        #expect(
            try await owed(env) == ["scan:1": .charge, "scan:2": .release, "scan:3": .release, "scan:4": .release])
        #expect(try await env.queue.record(exhausted)?.attempts == 3)
    }

    @Test func theUpkeepLeaderHandsSettlementsToTheLedgerOnceItTakesThem() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        // Refuses the first two rounds: the settlements stay in Redis until a round succeeds, then are forgotten.
        let ledger = RecordingLedger(failFirst: 2)
        let (worker, task) = env.startWorker(ledger: ledger)
        let ok = try await env.enqueue(.object([:]), options: EnqueueOptions(reservation: "scan:7"))
        let dead = try await env.enqueue(["fail": "permanent"], options: EnqueueOptions(reservation: "chat:8"))
        #expect(try await eventually { ledger.settled.count == 2 })
        #expect(try await eventually { try await owed(env).isEmpty })
        worker.stop()
        try await task.value
        #expect(
            Set(ledger.settled.map { "\($0.reservation) \($0.job) \($0.outcome)" }) == [
                "scan:7 \(ok) charge", "chat:8 \(dead) release",
            ])
    }

    @Test(arguments: TestServices.redisURLs) func aJobWithTheProducersIDIsEnqueuedOnce(redisURL: String) async throws {
        let env = try TestEnvironment(redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        let id = JobID.random()
        let options = EnqueueOptions(owner: "u1", id: id, reservation: "scan:9")
        #expect(try await env.queue.enqueue("noop", payload: .object([:]), options: options) == .enqueued(id))
        #expect(try await env.queue.enqueue("noop", payload: .object([:]), options: options) == .duplicate(of: id))
        let (worker, task) = env.startWorker()
        #expect(try await eventually { try await env.status(id) == .succeeded })
        // Delivered again after it ran (an outbox relay after a crash): still the one job, kept for its retention.
        #expect(try await env.queue.enqueue("noop", payload: .object([:]), options: options) == .duplicate(of: id))
        try await Task.sleep(for: .milliseconds(300))
        worker.stop()
        try await task.value
        #expect(try await env.stats().succeededTotal == 1)
        #expect(try await env.queue.record(id)?.owner == "u1")
        #expect(try await owed(env) == ["scan:9": .charge])
    }
}
