import Foundation
import JSON
import Queue
import Synchronization
import TestSupport
import Testing

/// A kind with `events: true` keeps a log per job beside its record: its state changes, written by the scripts that
/// change them, and what its handler publishes. `start_by:` ends a job not started in time as `expired`, unrun.
@Suite struct JobEventLogTests {
    /// Hears every job's end, as the push trigger does.
    final class EndRecorder: WorkerObserver {
        let ends = Mutex<[String: JobEnd]>([:])
        func jobStarted(kind: String, queue: String) {}
        func jobFinished(kind: String, queue: String, outcome: JobEnd, duration: Duration) {}
        func jobEnded(_ job: ReservedJob, outcome: JobEnd) { ends.withLock { $0[job.id.rawValue] = outcome } }
        var all: [String: JobEnd] { ends.withLock { $0 } }
    }

    static let logged = TestKinds.noop + "\nevents: true\n"
    /// A job must start within 5 s: one delayed 6 s cannot, whatever the load; one enqueued to a running worker does.
    static let expiring = logged + "start_by: 5s\n"

    func states(_ env: TestEnvironment, _ id: JobID) async throws -> [String] {
        let record = try #require(try await env.queue.record(id))
        let log = JobEventLog(redis: env.redis, prefix: env.queue.options.prefix)
        return try await log.events(of: id, queue: record.queue, after: nil).map { event in
            event.type == "state" ? "\(event.fields["status"] ?? "?")#\(event.fields["attempt"] ?? "?")" : event.type
        }
    }

    @Test(arguments: TestServices.redisURLs) func everyStateChangeIsLoggedInOrder(redisURL: String) async throws {
        let env = try TestEnvironment(kinds: ["noop": Self.logged], redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        let (worker, task) = env.startWorker()
        let succeeded = try await env.enqueue(.object([:]))
        let retriedThenDead = try await env.enqueue(["fail": "retry"])
        #expect(
            try await eventually {
                let first = try await env.status(succeeded)
                let second = try await env.status(retriedThenDead)
                return first == .succeeded && second == .failed
            })
        worker.stop()
        try await task.value
        #expect(try await states(env, succeeded) == ["queued#0", "running#1", "succeeded#1"])
        #expect(
            try await states(env, retriedThenDead) == [
                "queued#0", "running#1", "retrying#1", "running#2", "retrying#2", "running#3", "failed#3",
            ])
        // Plain kinds keep no log: no key, no cost.
        let plain = try TestEnvironment(redisURL: redisURL)
        defer { Task { await plain.cleanUp() } }
        let id = try await plain.enqueue(.object([:]), options: .init(owner: "u1"))
        let record = try #require(try await plain.queue.record(id))
        #expect(try await plain.redis.send(["EXISTS", plain.queue.keys(record.queue).jobEvents(id)]).int == 0)
    }

    /// A job not started by its `start_by` time does not run: it ends `expired` (its record, its log, the worker's
    /// observers), and what it reserved is released; one started in time runs as usual.
    @Test(arguments: TestServices.redisURLs) func aJobNotStartedInTimeExpiresUnrun(redisURL: String) async throws {
        let env = try TestEnvironment(kinds: ["noop": Self.expiring], redisURL: redisURL)
        defer { Task { await env.cleanUp() } }
        let late = try await env.enqueue(.object([:]), options: .init(delay: .seconds(6), reservation: "chat:late"))
        let warmup = try await env.enqueue(.object([:]))
        let recorder = EndRecorder()
        let (worker, task) = env.startWorker(observers: [recorder])
        // The on-time job is enqueued once the worker runs (it has ended a first job, either way): under CI's load a
        // worker once took over 5 s to start its first job (2026-11-28), and the job expired.
        #expect(try await eventually(timeout: .seconds(30)) { [.succeeded, .expired].contains(try await env.status(warmup)) })
        let onTime = try await env.enqueue(.object([:]), options: .init(reservation: "chat:on-time"))
        #expect(
            try await eventually(timeout: .seconds(30)) {
                let first = try await env.status(late)
                let second = try await env.status(onTime)
                return first == .expired && second == .succeeded
            })
        worker.stop()
        try await task.value
        let record = try #require(try await env.queue.record(late))
        #expect(record.attempts == 0 && record.startedAt == nil && record.finishedAt != nil)
        #expect(try await states(env, late) == ["queued#0", "expired#0"])
        #expect(recorder.all.filter { $0.key != warmup.rawValue } == [late.rawValue: .expired, onTime.rawValue: .succeeded])
        var owed: [String: Settlement.Outcome] = [:]
        for queue in env.queue.allShards {
            for entry in try await env.queue.settlements(queue: queue, limit: 100) {
                if let settlement = entry.settlement { owed[settlement.reservation] = settlement.outcome }
            }
        }
        #expect(owed == ["chat:late": .release, "chat:on-time": .charge])
        // An operator cannot cancel what has ended.
        await #expect(throws: QueueError.self) { try await env.queue.cancel(late) }
    }

    /// What a handler publishes lands in its job's log, announced on the queue's completion channel.
    @Test func publishedEventsAreAppendedAndAnnounced() async throws {
        let env = try TestEnvironment(kinds: ["noop": Self.logged])
        defer { Task { await env.cleanUp() } }
        let id = try await env.enqueue(.object([:]))
        let record = try #require(try await env.queue.record(id))
        let log = JobEventLog(redis: env.redis, prefix: env.queue.options.prefix)
        let subscriber = env.redis.blockingConnection(name: "test")
        defer { subscriber.close() }
        _ = try await subscriber.send(["SSUBSCRIBE", env.queue.keys(record.queue).events], blockFor: .seconds(1))
        try await log.append("delta", [("text", "Rice has ")], of: id, queue: record.queue, lifetime: .seconds(60))
        try await log.append("delta", [("text", "about 28 g.")], of: id, queue: record.queue, lifetime: .seconds(60))
        let message = try await subscriber.receive(timeout: .seconds(2))
        #expect(message.array?.last?.string == "\(id.rawValue) delta")
        let events = try await log.events(of: id, queue: record.queue, after: nil)
        #expect(events.map(\.type) == ["state", "delta", "delta"])
        #expect(events.dropFirst().compactMap { $0.fields["text"] }.joined() == "Rice has about 28 g.")
        #expect(try await log.events(of: id, queue: record.queue, after: events[1].id).map(\.id) == [events[2].id])
        let ttl = try await env.redis.send(["PTTL", env.queue.keys(record.queue).jobEvents(id)]).int ?? 0
        #expect(ttl > 0 && ttl <= 60_000)
        #expect(JobEventLog.isEventID(events[0].id) && !JobEventLog.isEventID("1-x") && JobEventLog.isEventID("12"))
        #expect(JobEventLog.isEvent(events[1].id, after: events[0].id) && !JobEventLog.isEvent(events[0].id, after: events[1].id))
        #expect(
            JobEventLog.isEvent("10-0", after: "9-5") && JobEventLog.isEvent("9-6", after: "9-5")
                && !JobEventLog.isEvent("9-5", after: "9-5"))
    }
}
