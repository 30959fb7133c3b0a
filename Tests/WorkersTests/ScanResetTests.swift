import Foundation
import JSON
import Postgres
import Queue
import Store
import TestSupport
import Testing
import Workers

/// scan-reset end to end: real schedulers, a real worker, real Postgres.
@Suite struct ScanResetTests {
    static func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    /// Three schedulers whose clocks cross midnight into December 1st together: the daily (free) and the monthly
    /// (paid) schedule each fire once, and every due user is reset exactly once for their period.
    @Test func threeSchedulersResetEachUserOncePerPeriod() async throws {
        try await WorkerTestEnvironment.run { env in
            let midnight = Self.date("2026-12-01T00:00:00Z")
            var free: [String] = []
            var paid: [(String, Tier)] = []
            for _ in 0..<4 { free.append(try await env.usedUpUser(.free, resetDate: midnight)) }
            for tier in [Tier.essentials, .essentials, .pro, .pro] {
                paid.append((try await env.usedUpUser(tier, resetDate: midnight), tier))
            }
            // Already reset for December 1st by the quota check: not due, left alone.
            let early = try await env.usedUpUser(.free, resetDate: Self.date("2026-12-02T00:00:00Z"), remaining: 1)

            let (worker, workerTask) = env.startWorker(settings: WorkerSettings())
            // The clocks read 23:59:56 on November 30th now and run at real speed.
            let offset = Self.date("2026-11-30T23:59:56Z").timeIntervalSinceNow
            let clock: @Sendable () -> Date = { Date().addingTimeInterval(offset) }
            let schedulers = (0..<3).map { _ in CronScheduler(queue: env.queue, logger: WorkerTestEnvironment.logger, now: clock) }
            let tasks = schedulers.map { scheduler in Task { try await scheduler.run() } }
            #expect(
                try await eventually(timeout: .seconds(30)) { try await env.scanResetJobs().filter { $0.status == .succeeded }.count >= 2 })
            try await Task.sleep(for: .milliseconds(1500))
            for task in tasks { task.cancel() }

            let jobs = try await env.scanResetJobs()
            #expect(jobs.count == 2)
            #expect(jobs.allSatisfy { $0.status == .succeeded && $0.scheduledFor == midnight })
            let results = try jobs.map { try JSONValue(parsing: try #require($0.result)) }
            let daily = try #require(results.first { $0["scope"] == .string("daily") })
            let monthly = try #require(results.first { $0["scope"] == .string("monthly") })
            #expect(daily["period"] == .string("2026-12-01"))
            #expect(daily["usersReset"] == .int(4))
            #expect(monthly["period"] == .string("2026-12"))
            #expect(monthly["usersReset"] == .int(4))
            for id in free { #expect(try await env.quota(id) == (3, Self.date("2026-12-02T00:00:00Z"))) }
            for (id, tier) in paid { #expect(try await env.quota(id) == (tier.scanLimit, Self.date("2027-01-01T00:00:00Z"))) }
            #expect(try await env.quota(early) == (1, Self.date("2026-12-02T00:00:00Z")))

            // Scans used up again: a re-run of the same periods (a re-delivery, a duplicate, a manual run) gives none back.
            try await env.database.execute("UPDATE users SET remaining_scans = 0")
            let rerunDaily = try await env.runScanReset(#"{"scope":"daily","period":"2026-12-01"}"#)
            let rerunMonthly = try await env.runScanReset(#"{"scope":"monthly","period":"2026-12"}"#)
            #expect(rerunDaily["usersReset"] == .int(0))
            #expect(rerunMonthly["usersReset"] == .int(0))
            #expect(try await env.database.query("SELECT count(*) AS n FROM users WHERE remaining_scans <> 0")[0].decode("n") == 0)
            worker.stop()
            try await workerTask.value
        }
    }

    /// The scheduler was down over two midnights: at start it catches up the latest missed daily fire, which resets
    /// every free user still due (however long ago their date passed) and no paid user.
    @Test func catchUpAfterDowntimeResetsEveryDueUser() async throws {
        try await WorkerTestEnvironment.run { env in
            let spec = try #require(env.queue.catalog.kinds["scan-reset"])
            for schedule in spec.schedules {
                // The schedules last fired before the downtime.
                let last = schedule.name == "daily" ? Self.date("2026-11-20T00:00:00Z") : Self.date("2026-11-01T00:00:00Z")
                _ = try await env.queue.fire(kind: "scan-reset", schedule: schedule, at: last, catchUp: true)
            }
            let longDue = try await env.usedUpUser(.free, resetDate: Self.date("2026-11-21T00:00:00Z"))
            let due = try await env.usedUpUser(.free, resetDate: Self.date("2026-11-22T00:00:00Z"))
            let paidDue = try await env.usedUpUser(.essentials, resetDate: Self.date("2026-11-01T00:00:00Z"))

            let (worker, workerTask) = env.startWorker(settings: WorkerSettings())
            let offset = Self.date("2026-11-22T08:00:00Z").timeIntervalSinceNow
            let scheduler = CronScheduler(
                queue: env.queue, logger: WorkerTestEnvironment.logger, now: { Date().addingTimeInterval(offset) })
            let task = Task { try await scheduler.run() }
            #expect(try await eventually(timeout: .seconds(20)) { try await env.scanResetJobs().contains { $0.status == .succeeded } })
            task.cancel()
            let jobs = try await env.scanResetJobs()
            #expect(jobs.count == 1)
            let job = try #require(jobs.first)
            #expect(job.scheduledFor == Self.date("2026-11-22T00:00:00Z"))
            let result = try JSONValue(parsing: try #require(job.result))
            #expect(result["period"] == .string("2026-11-22"))
            #expect(result["usersReset"] == .int(2))
            for id in [longDue, due] { #expect(try await env.quota(id) == (3, Self.date("2026-11-23T00:00:00Z"))) }
            #expect(try await env.quota(paidDue) == (0, Self.date("2026-11-01T00:00:00Z")))
            worker.stop()
            try await workerTask.value
        }
    }

    /// The period is read in SCAN_RESET_TIMEZONE: midnight in Kolkata is 18:30 UTC the day before.
    @Test func periodFollowsTheResetTimeZone() async throws {
        try await WorkerTestEnvironment.run { env in
            let kolkataMidnight = Self.date("2026-11-21T18:30:00Z")
            let due = try await env.usedUpUser(.free, resetDate: kolkataMidnight)
            let notYet = try await env.usedUpUser(.free, resetDate: Self.date("2026-11-22T00:00:00Z"))
            let kolkata = try #require(TimeZone(identifier: "Asia/Kolkata"))
            let (worker, workerTask) = env.startWorker(settings: WorkerSettings(scanResetTimeZone: kolkata))
            let schedule = try #require(env.queue.catalog.kinds["scan-reset"]?.schedules.first { $0.name == "daily" })
            guard case .enqueued(let id) = try await env.queue.fire(kind: "scan-reset", schedule: schedule, at: kolkataMidnight) else {
                Issue.record("not enqueued")
                return
            }
            let result = try await env.result(of: id)
            #expect(result["period"] == .string("2026-11-22"))
            #expect(result["usersReset"] == .int(1))
            #expect(try await env.quota(due) == (3, Self.date("2026-11-22T18:30:00Z")))
            #expect(try await env.quota(notYet).0 == 0)
            worker.stop()
            try await workerTask.value
        }
    }

    /// A period of the wrong shape or no real date is a permanent failure, not a reset of some other period.
    @Test func malformedPeriodIsDeadAtOnce() async throws {
        try await WorkerTestEnvironment.run { env in
            let user = try await env.usedUpUser(.essentials, resetDate: Self.date("2026-01-01T00:00:00Z"))
            let (worker, workerTask) = env.startWorker(settings: WorkerSettings())
            for payload in [#"{"scope":"monthly","period":"2026-02-01"}"#, #"{"scope":"daily","period":"2026-02-30"}"#] {
                guard case .enqueued(let id) = try await env.queue.enqueue("scan-reset", payload: try JSONValue(parsing: payload)) else {
                    Issue.record("not enqueued")
                    continue
                }
                #expect(try await eventually { try await env.queue.record(id)?.status == .failed })
                #expect(try await env.queue.record(id)?.error?.contains("is not a") == true)
            }
            #expect(try await env.quota(user).0 == 0)
            worker.stop()
            try await workerTask.value
        }
    }

    /// Batches are short and separate: a row locked elsewhere does not hold up the others (they are reset and
    /// committed meanwhile), and it is reset once its lock is released.
    @Test func batchesSkipALockedRowAndSweepItAfterwards() async throws {
        try await WorkerTestEnvironment.run { env in
            let start = Self.date("2026-11-22T00:00:00Z")
            let next = Self.date("2026-11-23T00:00:00Z")
            var ids: [String] = []
            for _ in 0..<7 { ids.append(try await env.usedUpUser(.free, resetDate: start)) }
            let locked = ids.sorted()[3]
            let outcome = try await env.database.transaction { tx in
                try await tx.execute("SELECT id FROM users WHERE id = $1 FOR UPDATE", [locked])
                let reset = Task {
                    try await ScanResets(env.database).reset(tier: .free, periodStart: start, nextReset: next, batchSize: 2)
                }
                #expect(
                    try await eventually {
                        try await env.database.query("SELECT count(*) AS n FROM users WHERE remaining_scans = 3")[0].decode("n") == 6
                    })
                #expect(try await env.quota(locked).0 == 0)
                return reset
            }.value
            #expect(outcome.usersReset == 7)
            #expect(outcome.batches == 4)  // 6 rows in 3 batches that skip the locked one, then the sweep's one that waits for it
            for id in ids { #expect(try await env.quota(id) == (3, next)) }
            let again = try await ScanResets(env.database).reset(tier: .free, periodStart: start, nextReset: next, batchSize: 2)
            #expect(again.usersReset == 0)
        }
    }
}

/// The quota check's belt and braces: a user whose reset date has passed is reset before anything is read or taken.
@Suite struct ScanQuotaTests {
    static let now = ScanResetTests.date("2026-11-22T15:00:00Z")

    @Test func currentResetsADueUserOnceAndOnlyThen() async throws {
        try await WorkerTestEnvironment.run { env in
            let quota = ScanQuota(env.database)
            let due = try await env.usedUpUser(.pro, resetDate: ScanResetTests.date("2026-11-01T00:00:00Z"))
            let current = try await quota.current(userID: due, now: Self.now, timeZone: .gmt)
            #expect(current.remaining == 300 && current.tier == .pro)
            #expect(current.resetDate == ScanResetTests.date("2026-12-01T00:00:00Z"))
            // Not due any more: a second look (or the job) changes nothing.
            try await env.database.execute("UPDATE users SET remaining_scans = 7 WHERE id = $1", [due])
            #expect(try await quota.current(userID: due, now: Self.now, timeZone: .gmt).remaining == 7)
            let notDue = try await env.usedUpUser(.free, resetDate: ScanResetTests.date("2026-11-23T00:00:00Z"))
            #expect(try await quota.current(userID: notDue, now: Self.now, timeZone: .gmt).remaining == 0)
            await #expect(throws: StoreError.self) { try await quota.current(userID: "nobody", now: Self.now, timeZone: .gmt) }
        }
    }

    @Test func reserveTakesAtMostWhatIsLeftAndResetsFirst() async throws {
        try await WorkerTestEnvironment.run(poolSize: 8) { env in
            let quota = ScanQuota(env.database)
            // Due since this midnight with none left: the first reserve resets to 3 and takes one.
            let user = try await env.usedUpUser(.free, resetDate: ScanResetTests.date("2026-11-22T00:00:00Z"))
            let granted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<10 { group.addTask { try await quota.reserve(userID: user, now: Self.now, timeZone: .gmt) } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(granted == 3)
            #expect(try await env.quota(user) == (0, ScanResetTests.date("2026-11-23T00:00:00Z")))
            #expect(try await quota.reserve(userID: user, now: Self.now, timeZone: .gmt) == false)
            // Refunds give scans back, never past the tier's limit.
            for _ in 0..<5 { try await quota.refund(userID: user) }
            #expect(try await env.quota(user).0 == 3)
            // Next day: the reserve resets first, so the user has 2 left, not 3 - 1 from the old period's count.
            try await env.database.execute("UPDATE users SET remaining_scans = 1 WHERE id = $1", [user])
            let tomorrow = Self.now.addingTimeInterval(86_400)
            #expect(try await quota.reserve(userID: user, now: tomorrow, timeZone: .gmt))
            #expect(try await env.quota(user) == (2, ScanResetTests.date("2026-11-24T00:00:00Z")))
        }
    }
}

extension WorkerTestEnvironment {
    /// A user of `tier` with `remaining` scans and the given reset date.
    func usedUpUser(_ tier: Tier, resetDate: Date, remaining: Int = 0) async throws -> String {
        let id = try await createUser(tier: tier).id
        try await database.execute("UPDATE users SET remaining_scans = $2, scan_reset_date = $3 WHERE id = $1", [id, remaining, resetDate])
        return id
    }

    func quota(_ id: String) async throws -> (Int, Date) {
        let row = try await database.query("SELECT remaining_scans, scan_reset_date FROM users WHERE id = $1", [id])[0]
        return (try row.decode("remaining_scans"), try row.decode("scan_reset_date"))
    }

    /// Every scan-reset job on record.
    func scanResetJobs() async throws -> [JobRecord] {
        let keys = try await redis.send(["KEYS", queue.keys("maintenance").base + "job:*"]).array ?? []
        var records: [JobRecord] = []
        for key in keys {
            guard let text = key.string, let id = JobID(rawValue: String(text.split(separator: ":").last!)),
                let record = try await queue.record(id), record.kind == "scan-reset"
            else { continue }
            records.append(record)
        }
        return records
    }

    /// Enqueues a scan-reset job, waits for it to succeed and returns its result.
    func runScanReset(_ payload: String) async throws -> JSONValue {
        guard case .enqueued(let id) = try await queue.enqueue("scan-reset", payload: try JSONValue(parsing: payload)) else {
            throw StoreError("not enqueued")
        }
        return try await result(of: id)
    }

    func result(of id: JobID) async throws -> JSONValue {
        #expect(try await eventually { try await queue.record(id)?.status == .succeeded })
        let record = try #require(try await queue.record(id))
        return try JSONValue(parsing: try #require(record.result))
    }
}
