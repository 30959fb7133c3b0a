import Foundation
import Queue
import TestSupport
import Testing

/// The parts of guarantees 3 and 9 that end-to-end tests with the default test kind did not reach: a retry waits
/// for its own kind's backoff, the dead set drops jobs past its age, and a job keeps only its last ten errors.
@Suite struct RetryAndRetentionTests {
    static func noop(attempts: Int, backoff: String) -> String {
        TestEnvironment.noop.replacingOccurrences(of: "attempts: 3", with: "attempts: \(attempts)")
            .replacingOccurrences(of: "backoff: { type: fixed, delay: 100ms }", with: "backoff: \(backoff)")
    }

    /// A kind whose backoff is a fixed 1.5 s: its second attempt fails at least 1.5 s after its first (the worker's
    /// own 100 ms promotion interval would otherwise rerun it at once).
    @Test func aRetryWaitsForItsKindsBackoff() async throws {
        let env = try TestEnvironment(kinds: ["noop": Self.noop(attempts: 2, backoff: "{ type: fixed, delay: 1500ms }")])
        defer { Task { await env.cleanUp() } }
        let (worker, task) = env.startWorker()
        let id = try await env.enqueue(["fail": "retry"])
        #expect(try await eventually { try await env.status(id) == .failed })
        worker.stop()
        try await task.value
        let errors = try #require(try await env.queue.record(id)).errors
        try #require(errors.count == 2)
        let gap = errors[1].at.timeIntervalSince(errors[0].at)
        #expect(gap >= 1.5, "the second attempt failed \(gap) s after the first; the backoff is 1.5 s")
    }

    /// A job buried longer ago than the dead set's age leaves it (and its record) when the next one is buried.
    @Test func theDeadSetDropsJobsPastItsAge() async throws {
        let env = try TestEnvironment(options: QueueOptions(deadSetMaxAge: .milliseconds(500)))
        defer { Task { await env.cleanUp() } }
        try await env.queue.prepare(queues: ["default"])
        let dead = env.queue.keys("default").dead
        func bury() async throws -> JobID {
            let id = try await env.enqueue()
            let job = try #require(try await env.queue.reserve(queue: "default", count: 1, consumer: "w").first)
            try await env.queue.record([.dead(job, error: "boom", retention: .seconds(3600))])
            return id
        }
        let old = try await bury()
        #expect(try await env.redis.send(["ZSCORE", dead, old.rawValue]).string != nil)
        try await Task.sleep(for: .milliseconds(700))
        let new = try await bury()
        #expect(try await env.redis.send(["ZSCORE", dead, old.rawValue]).string == nil, "a job past the age stayed")
        #expect(try await env.queue.record(old) == nil)
        #expect(try await env.redis.send(["ZSCORE", dead, new.rawValue]).string != nil)
    }

    /// Twelve failed attempts keep the last ten errors, attempts 3 to 12. The lease is long: on a loaded machine a
    /// 3 s one was once reclaimed mid-attempt, a thirteenth attempt that is at-least-once working, not this test's
    /// subject (a clean-clone run counted 13).
    @Test func aJobKeepsItsLastTenErrors() async throws {
        let kind = Self.noop(attempts: 12, backoff: "{ type: fixed, delay: 10ms }")
            .replacingOccurrences(of: "visibility_timeout: 3s", with: "visibility_timeout: 60s")
        let env = try TestEnvironment(kinds: ["noop": kind])
        defer { Task { await env.cleanUp() } }
        let (worker, task) = env.startWorker()
        let id = try await env.enqueue(["fail": "retry"])
        #expect(try await eventually(timeout: .seconds(30)) { try await env.status(id) == .failed })
        worker.stop()
        try await task.value
        let record = try #require(try await env.queue.record(id))
        #expect(record.attempts == 12)
        #expect(record.errors.map(\.attempt) == Array(3...12))
    }
}
