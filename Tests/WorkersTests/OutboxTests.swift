import Foundation
import JSON
import Outbox
import Postgres
import Queue
import TestSupport
import Testing

/// The outbox's relay: what a producer left behind after its commit reaches the queue once, with the id, owner and
/// reservation it was written with, whether or not the producer's own enqueue happened.
@Suite struct OutboxTests {
    func rows(_ env: WorkerTestEnvironment) async throws -> Int {
        try await env.database.query("SELECT count(*)::int FROM job_outbox")[0].decode(0)
    }

    @Test func theRelayDeliversWhatAProducerLeftOnceAndLeavesFreshRowsToTheirProducer() async throws {
        try await WorkerTestEnvironment.run { env in
            let outbox = JobOutbox(database: env.database, queue: env.queue)
            // Left after the commit (the producer died before its enqueue), and enqueued but not deleted (died between).
            let left = JobOutbox.Job(kind: "noop", payload: ["sleepMs": 0], owner: "u1", reservation: "scan:1")
            let enqueued = JobOutbox.Job(kind: "noop", payload: ["sleepMs": 0], owner: "u2")
            let fresh = JobOutbox.Job(kind: "noop", payload: ["sleepMs": 0])
            try await env.database.transaction { tx in
                for job in [left, enqueued, fresh] { try await outbox.add(job, in: tx) }
            }
            try await env.database.execute(
                "UPDATE job_outbox SET created_at = now() - interval '1 minute' WHERE job_id <> $1::uuid", [fresh.id.rawValue])
            _ = try await env.queue.enqueue("noop", payload: ["sleepMs": 0], options: EnqueueOptions(owner: "u2", id: enqueued.id))

            #expect(try await outbox.relay(olderThan: .seconds(5)) == 2)
            #expect(try await rows(env) == 1)
            #expect(try await outbox.relay(olderThan: .seconds(5)) == 0)
            let record = try #require(try await env.queue.record(left.id))
            #expect(record.owner == "u1" && record.status == .queued)
            #expect(try await env.redis.send(["HGET", env.queue.keys("default").job(left.id), "resv"]).string == "scan:1")
            // One job per id: the one the producer enqueued and the relay's copy are the same job.
            #expect(try await env.redis.send(["XLEN", env.queue.keys("default").stream]).int == 2)
            // The producer's fast path delivers its own row.
            #expect(await outbox.deliver(fresh))
            #expect(try await rows(env) == 0)
        }
    }

    /// A payload its kind refuses never reaches the outbox: the producer's transaction fails with it.
    @Test func aBadPayloadIsRefusedBeforeAnythingCommits() async throws {
        try await WorkerTestEnvironment.run { (env: WorkerTestEnvironment) async throws in
            let outbox = JobOutbox(database: env.database, queue: env.queue)
            await #expect(throws: QueueError.self) {
                try await env.database.transaction { tx in
                    try await outbox.add(JobOutbox.Job(kind: "noop", payload: ["sleepMs": "soon"]), in: tx)
                }
            }
            await #expect(throws: QueueError.self) {
                try await env.database.transaction { tx in
                    try await outbox.add(JobOutbox.Job(kind: "no-such-kind", payload: .object([:])), in: tx)
                }
            }
            #expect(try await rows(env) == 0)
        }
    }
}
