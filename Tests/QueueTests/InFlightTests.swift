import Foundation
import Testing

@testable import Queue

/// The timeout check skips its scan of the running jobs until the earliest deadline could have passed.
@Suite struct InFlightTests {
    static func job(_ entry: String, queue: String = "default") -> ReservedJob {
        ReservedJob(
            id: JobID.random(), queue: queue, entry: entry, kind: "noop", payload: "{}", attempt: 1, maxAttempts: 3,
            scheduledFor: nil, enqueuedAt: Date(), isolated: false, expired: false)
    }

    static func running(_ inFlight: InFlight, _ entry: String, deadline: ContinuousClock.Instant) -> Task<Void, Never> {
        let task = Task<Void, Never> { try? await Task.sleep(for: .seconds(60)) }
        inFlight.insert(job(entry), deadline: deadline)
        inFlight.attach(task, to: job(entry))
        return task
    }

    /// A job that arrives after a scan with a deadline before every other running job's still times out on time: the
    /// bound the scan left (the long job's deadline) comes down with it.
    @Test func aJobWithAnEarlierDeadlineThanTheRestStillTimesOut() async throws {
        let inFlight = InFlight()
        let start = ContinuousClock.now
        let long = Self.running(inFlight, "1-0", deadline: start + .seconds(60))
        #expect(inFlight.expire(now: start).isEmpty)
        let short = Self.running(inFlight, "2-0", deadline: start + .milliseconds(50))
        #expect(inFlight.expire(now: start + .milliseconds(10)).isEmpty)
        let expired = inFlight.expire(now: start + .milliseconds(60))
        #expect(expired.count == 1)
        #expect(inFlight.cancellation(of: Self.job("2-0")) == .timeout)
        #expect(inFlight.cancellation(of: Self.job("1-0")) == nil)
        // Past the long job's deadline it goes too, and only once.
        #expect(inFlight.expire(now: start + .seconds(61)).count == 1)
        #expect(inFlight.expire(now: start + .seconds(62)).isEmpty)
        #expect(inFlight.cancellation(of: Self.job("1-0")) == .timeout)
        long.cancel()
        short.cancel()
    }

    /// Two shards' (or queues') entries may share an id (added in the same millisecond): both count as running, each
    /// leaves on its own. Keyed by the entry id alone, the second replaced the first and the queue's count fell short.
    @Test func entriesOfTwoShardsWithOneIdAreTwoJobs() {
        let inFlight = InFlight()
        let (a, b) = (Self.job("7-0", queue: "ai#0"), Self.job("7-0", queue: "ai#1"))
        inFlight.insert(a, deadline: .now + .seconds(60))
        inFlight.insert(b, deadline: .now + .seconds(60))
        #expect(inFlight.count(inQueue: "ai") == 2)
        inFlight.remove(a)
        #expect(inFlight.count(inQueue: "ai") == 1)
        inFlight.remove(b)
        #expect(inFlight.count(inQueue: "ai") == 0)
    }
}
