import Foundation
import Logging
import Queue
import TestSupport
import Testing

@Suite struct SchedulerTests {
    /// Three schedulers whose clocks cross a minute boundary together: the fire happens once, in its time zone.
    @Test func threeSchedulersFireEachTimeOnce() async throws {
        let env = try TestEnvironment(kinds: [
            "noop": TestEnvironment.noop + """

                schedules:
                  - { name: minutely, cron: "* * * * *", timezone: Asia/Kolkata, payload: { result: tick } }
                """
        ])
        defer { Task { await env.cleanUp() } }
        // A clock that reads 48 s past a minute now and runs at real speed: the schedulers start well before the
        // fire, so it is an on-time fire, not a first-run catch-up (which only records the time of a schedule that
        // never fired). Under a loaded run they took more than 4 s to start: with the tracing system tests' processes
        // starting beside them, 5 of 6 runs of `--filter "TelemetryTests|TracingTests|QueueTests"` failed at 56 s.
        let real = Date()
        let fake = (real.timeIntervalSince1970 / 60).rounded(.down) * 60 + 60 * 60 + 48
        let offset = fake - real.timeIntervalSince1970
        let clock: @Sendable () -> Date = { Date().addingTimeInterval(offset) }
        let schedulers = (0..<3).map { _ in CronScheduler(queue: env.queue, logger: env.logger, now: clock) }
        let tasks = schedulers.map { scheduler in Task { try await scheduler.run() } }
        defer { for task in tasks { task.cancel() } }
        #expect(try await eventually(timeout: .seconds(20)) { try await env.stats().queued >= 1 })
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await env.stats().queued == 1)
        // Its record names the fire time: the minute boundary after the start.
        try await env.queue.prepare(queues: ["default"])
        let job = try #require(try await env.queue.reserve(queue: "default", count: 5, consumer: "t").first)
        let expected = Date(timeIntervalSince1970: (fake / 60).rounded(.up) * 60)
        #expect(job.scheduledFor == expected)
        #expect(job.payload == #"{"result":"tick"}"#)
    }

    /// A daily midnight in Pacific/Kiritimati (UTC+14) is that zone's midnight, not UTC's: on its first run a
    /// scheduler records the schedule's latest fire time as its baseline, and that is the zone's last midnight.
    @Test func aSchedulesTimesAreInItsOwnZone() async throws {
        let env = try TestEnvironment(kinds: [
            "noop": TestEnvironment.noop + """

                schedules:
                  - { name: daily, cron: "0 0 * * *", timezone: Pacific/Kiritimati }
                """
        ])
        defer { Task { await env.cleanUp() } }
        let scheduler = CronScheduler(queue: env.queue, logger: env.logger)
        let started = Date()
        let task = Task { try await scheduler.run() }
        defer { task.cancel() }
        let cron = env.queue.keys("default").cron
        var baseline: String?
        #expect(
            try await eventually {
                baseline = try await env.redis.send(["HGET", cron, "noop:daily"]).string
                return baseline != nil
            })
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Pacific/Kiritimati")!
        let midnight = calendar.startOfDay(for: started)
        #expect(
            baseline == String(Int64(midnight.timeIntervalSince1970 * 1000)), "baseline \(baseline ?? "-"), zone's midnight \(midnight)")
        #expect(try await env.stats().queued == 0, "a first run records its baseline; it fires nothing")
    }
}

@Suite struct WeightTests {
    @Test func heavierQueuesGoFirstMoreOftenAndNoneIsStarved() throws {
        let env = try TestEnvironment(kinds: ["noop": TestEnvironment.noop, "other": "queue: low\npayload: { type: object }"])
        defer { Task { await env.cleanUp() } }
        let (worker, task) = env.startWorker(queues: [("default", 3), ("low", 1)])
        worker.stop()
        task.cancel()
        var firsts = ["default": 0, "low": 0]
        for _ in 0..<4000 { firsts[worker.weightedOrderForTesting().first!, default: 0] += 1 }
        #expect((2700...3300).contains(firsts["default"]!))
        #expect(firsts["low"]! > 700)
        #expect(Set(worker.weightedOrderForTesting()) == ["default", "low"])
    }
}
