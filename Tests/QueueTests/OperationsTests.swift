import Foundation
import JSON
import Queue
import Redis
import TestSupport
import Testing
import Workers

/// The operator tools on a real Redis with in-process workers: pausing, quieting, cancelling, the history.
@Suite struct OperationsTests {
    /// noop on `default`, and `orphan` on `other`: a kind without a handler, so a worker that takes one buries it (a
    /// visible pickup with no handler to write).
    static let kinds: [String: String] = [
        "noop": TestEnvironment.noop,
        "orphan": """
        queue: other
        timeout: 5s
        visibility_timeout: 3s
        attempts: 1
        retention: { succeeded: 1h, failed: 1d }
        """,
    ]

    /// noop whose retries wait an hour.
    static let slowRetryNoop = """
        queue: default
        timeout: 5s
        visibility_timeout: 3s
        attempts: 3
        backoff: { type: fixed, delay: 1h }
        retention: { succeeded: 1h, failed: 1d }
        """

    /// A worker serving every queue with its beacon (beats every 3 s: in a loaded full test run, beats of 200 ms and of
    /// 1 s came later than their two-beat lifetime; signals and the paused set are still read every second) and
    /// counters; the tasks run until cancelled.
    struct Running {
        let worker: Worker
        let beacon: ProcessBeacon
        let counters: ProcessCounters
        let tasks: [Task<Void, any Error>]

        func stop() async {
            worker.stop()
            for task in tasks { task.cancel() }
            for task in tasks { _ = await task.result }
        }
    }

    static func start(_ env: TestEnvironment, concurrency: Int = 5) -> Running {
        let counters = ProcessCounters()
        var options = WorkerOptions(
            queues: env.queue.catalog.queues.map { ($0, 1) }, concurrency: concurrency, gracePeriod: .seconds(5),
            blockTimeout: .seconds(2), promoteInterval: .milliseconds(100), reclaimInterval: .milliseconds(200))
        options.observers = [counters]
        let worker = Worker(queue: env.queue, registry: Handlers.registry(redis: env.redis), options: options, logger: env.logger)
        let beacon = ProcessBeacon(
            queue: env.queue, worker: worker, counters: counters, interval: .seconds(3), version: "test", logger: env.logger)
        return Running(
            worker: worker, beacon: beacon, counters: counters,
            tasks: [Task { try await worker.run() }, Task { try await beacon.run() }])
    }

    static func noop(_ fields: [String: JSONValue] = [:]) -> JSONValue { .object(fields) }

    // MARK: Pause

    @Test func pausingAQueueStopsItsPickupOnlyAndResumingRestartsIt() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let control = QueueControl(queue: env.queue)
        let running = Self.start(env)
        defer { Task { await running.stop() } }
        try await control.pause(queue: "default")
        #expect(try await control.pausedQueues() == ["default"])
        #expect(try await eventually { running.worker.pausedQueues == ["default"] })
        // Enqueues are still accepted.
        let held = try #require(try await env.queue.enqueue("noop", payload: Self.noop(), options: .init(indexed: true)).id)
        let other = try #require(try await env.queue.enqueue("orphan", payload: Self.noop(), options: .init(indexed: true)).id)
        // The other queue's job is taken (and buried: no handler); by then and a second more, the paused one waits.
        #expect(try await eventually { try await env.status(other) == .failed })
        try await Task.sleep(for: .seconds(1))
        #expect(try await env.status(held) == .queued)
        #expect(try await control.overview().first { $0.queue == "default" }?.paused == true)
        try await control.resume(queue: "default")
        #expect(try await eventually { try await env.status(held) == .succeeded })
        #expect(try await control.pausedQueues().isEmpty)
    }

    @Test func anUnknownQueueCannotBePausedOrResumed() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let control = QueueControl(queue: env.queue)
        await #expect(throws: QueueError.self) { try await control.pause(queue: "nope") }
        do {
            try await control.resume(queue: "nope")
            Issue.record("resume of an unknown queue was accepted")
        } catch let error as QueueError {
            #expect(error.code == .unknownQueue)
            #expect(error.message.contains("unknown queue 'nope'"))
        }
        #expect(try await control.pausedQueues().isEmpty)
    }

    // MARK: Quiet

    @Test func aQuietWorkerFinishesItsJobsAndTakesNoNewOne() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let running = Self.start(env)
        defer { Task { await running.stop() } }
        let registry = ProcessRegistry(queue: env.queue)
        let long = try #require(
            try await env.queue.enqueue("noop", payload: Self.noop(["sleepMs": .int(800)]), options: .init(indexed: true)).id)
        #expect(try await eventually { try await env.status(long) == .running })
        // The beacon's first beat may come after the job started (a loaded clean-clone run signalled before it).
        #expect(try await eventually { try await registry.processes().count == 1 })
        // A prefix of the id names the process.
        let id = try await registry.signal(.quiet, to: String(running.worker.options.consumer.prefix(6)))
        #expect(id == running.worker.options.consumer)
        #expect(try await eventually { try await registry.processes().first?.state == .quiet })
        let later = try #require(try await env.queue.enqueue("noop", payload: Self.noop(), options: .init(indexed: true)).id)
        #expect(try await eventually { try await env.status(long) == .succeeded })
        try await Task.sleep(for: .seconds(1))
        #expect(try await env.status(later) == .queued)
        #expect(running.worker.busy == 0)
        #expect(try await registry.processes().map(\.state) == [.quiet])
    }

    @Test func aSignalToAnUnknownOrAmbiguousProcessIsRefused() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let first = Self.start(env)
        let second = Self.start(env)
        defer {
            Task {
                await first.stop()
                await second.stop()
            }
        }
        let registry = ProcessRegistry(queue: env.queue)
        #expect(try await eventually { try await registry.processes().count == 2 })
        let unknown = await #expect(throws: QueueError.self) { try await registry.signal(.quiet, to: "nobody") }
        #expect(unknown?.code == .notFound)
        // Both ids start with the host name.
        let ambiguous = await #expect(throws: QueueError.self) {
            try await registry.signal(.quiet, to: String(first.worker.options.consumer.prefix(2)))
        }
        #expect(ambiguous?.code == .ambiguous)
        #expect(!first.worker.isQuiet && !second.worker.isQuiet)
    }

    // MARK: Cancel

    @Test func aCancelledQueuedJobNeverRunsAndFreesItsUniqueKey() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let effects = "\(env.prefix):effects"
        let payload = Self.noop(["record": .string(effects)])
        // A plain job (only its stream entry), an indexed one, and one holding a unique key.
        let plain = try #require(try await env.queue.enqueue("noop", payload: payload).id)
        let indexed = try #require(try await env.queue.enqueue("noop", payload: payload, options: .init(indexed: true)).id)
        let unique = try #require(try await env.queue.enqueue("noop", payload: payload, options: .init(uniqueKey: "u1")).id)
        for id in [plain, indexed, unique] {
            #expect(try await env.queue.cancel(id) == .queued)
            #expect(try await env.status(id) == .cancelled)
        }
        #expect(try await env.queue.enqueue("noop", payload: payload, options: .init(uniqueKey: "u1")).id != nil)
        let control = try #require(try await env.queue.enqueue("noop", payload: payload, options: .init(indexed: true)).id)
        let running = Self.start(env)
        defer { Task { await running.stop() } }
        #expect(try await eventually { try await env.status(control) == .succeeded })
        #expect(
            try await eventually {
                let stats = try await env.stats()
                return stats.queued == 0 && stats.running == 0
            })
        // Only the control job and the second unique one ran; the cancelled ones were acknowledged unrun.
        let ran = Set(try await env.redis.send(["LRANGE", effects, "0", "-1"]).array?.compactMap(\.string) ?? [])
        #expect(ran.count == 2 && ran.contains(control.rawValue))
        for id in [plain, indexed, unique] {
            #expect(!ran.contains(id.rawValue))
            #expect(try await env.status(id) == .cancelled)
        }
        #expect(try await env.redis.send(["SCARD", env.queue.keys("default").base + "cancelled"]).int == 0)
        let twice = await #expect(throws: QueueError.self) { try await env.queue.cancel(plain) }
        #expect(twice?.code == .alreadyFinished)
    }

    @Test func aCancelledDelayedOrRetryingJobLeavesItsSet() async throws {
        let env = try TestEnvironment(kinds: ["noop": Self.slowRetryNoop])
        defer { Task { await env.cleanUp() } }
        let keys = env.queue.keys("default")
        let delayed = try #require(try await env.queue.enqueue("noop", payload: Self.noop(), options: .init(delay: .seconds(60))).id)
        #expect(try await env.queue.cancel(delayed) == .scheduled)
        #expect(try await env.redis.send(["ZCARD", keys.scheduled]).int == 0)
        #expect(try await env.status(delayed) == .cancelled)

        let running = Self.start(env)
        defer { Task { await running.stop() } }
        let failing = try #require(try await env.queue.enqueue("noop", payload: Self.noop(["fail": .string("retry")])).id)
        #expect(try await eventually { try await env.status(failing) == .retrying })
        #expect(try await env.queue.cancel(failing) == .retrying)
        #expect(try await env.redis.send(["ZCARD", keys.retry]).int == 0)
        let record = try #require(try await env.queue.record(failing))
        #expect(record.status == .cancelled && record.error == "cancelled by an operator" && record.finishedAt != nil)
    }

    @Test func aRunningJobIsCancelledThroughItsWorker() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let running = Self.start(env)
        defer { Task { await running.stop() } }
        let effects = "\(env.prefix):effects"
        let id = try #require(
            try await env.queue.enqueue(
                "noop", payload: Self.noop(["sleepMs": .int(20_000), "record": .string(effects)]), options: .init(indexed: true)
            ).id)
        #expect(try await eventually { try await env.status(id) == .running })
        #expect(try await env.queue.cancel(id) == .running(process: running.worker.options.consumer))
        #expect(try await eventually { try await env.status(id) == .cancelled })
        #expect(running.worker.busy == 0)
        #expect(try await env.redis.send(["LLEN", effects]).int == 0)
        #expect(try await env.stats().retrying == 0)
        let finished = await #expect(throws: QueueError.self) { try await env.queue.cancel(id) }
        #expect(finished?.code == .alreadyFinished)
    }

    @Test func aJobCancelledWhileItsWorkerIsGoneNeverRunsAgain() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let id = try #require(try await env.queue.enqueue("noop", payload: Self.noop(), options: .init(indexed: true)).id)
        // A delivery whose worker vanished: reserved, never finished.
        let reserved = try await env.queue.reserve(queue: "default", count: 1, consumer: "gone")
        #expect(reserved.map(\.id) == [id])
        #expect(try await env.queue.cancel(id) == .running(process: "gone"))
        #expect(try await env.status(id) == .running)
        // Its lease runs out (3 s); the reclaim hands it back, and the next start drops it as cancelled.
        let running = Self.start(env)
        defer { Task { await running.stop() } }
        #expect(try await eventually(timeout: .seconds(20)) { try await env.status(id) == .cancelled })
        #expect(try await env.queue.record(id)?.attempts == 1)
    }

    /// A job enqueued without a record has it written whole by its start, and its end is recorded without reading it
    /// (finish.lua), unless an operator cancelled it meanwhile.
    @Test func aRunningJobWithAPlainRecordIsCancelledWhateverItsWorkerReports() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let failing = try await env.enqueue()
        let succeeding = try await env.enqueue()
        let untouched = try await env.enqueue()
        let jobs = try await env.queue.reserve(queue: "default", count: 3, consumer: "gone")
        #expect(Set(jobs.map(\.id)) == [failing, succeeding, untouched])
        #expect(try await env.queue.cancel(failing) == .running(process: "gone"))
        #expect(try await env.queue.cancel(succeeding) == .running(process: "gone"))
        try await env.queue.record(
            jobs.map {
                $0.id == failing
                    ? .retry($0, error: "boom", after: .seconds(1)) : .succeeded($0, result: nil, retention: .seconds(60))
            })
        #expect(try await env.status(failing) == .cancelled)
        #expect(try await env.status(succeeding) == .succeeded)
        #expect(try await env.status(untouched) == .succeeded)
        #expect(try await env.stats().retrying == 0)
        // Their ids go with them: later batches read no record.
        #expect(try await env.redis.send(["SCARD", env.queue.keys("default").cancelling]).int == 0)
    }

    @Test func finishedAndUnknownJobsCannotBeCancelled() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let running = Self.start(env)
        defer { Task { await running.stop() } }
        let done = try #require(try await env.queue.enqueue("noop", payload: Self.noop(), options: .init(indexed: true)).id)
        #expect(try await eventually { try await env.status(done) == .succeeded })
        let finished = await #expect(throws: QueueError.self) { try await env.queue.cancel(done) }
        #expect(finished?.code == .alreadyFinished)
        #expect(finished?.message.contains("already finished (succeeded)") == true)
        #expect(try await env.status(done) == .succeeded)
        let unknown = await #expect(throws: QueueError.self) { try await env.queue.cancel(JobID.random()) }
        #expect(unknown?.code == .notFound)
    }

    // MARK: Registry and history

    @Test func theHistoryAndTheRegistryCountWhatEnded() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let running = Self.start(env)
        let registry = ProcessRegistry(queue: env.queue)
        _ = try await env.queue.enqueue(
            Array(repeating: ("noop", Self.noop(["sleepMs": .int(5)]), EnqueueOptions()), count: 3)
                + Array(repeating: ("noop", Self.noop(["fail": .string("permanent")]), EnqueueOptions()), count: 2)
                + [("orphan", Self.noop(), EnqueueOptions())])
        #expect(
            try await eventually {
                let (mine, other) = (try await env.stats(), try await env.stats("other"))
                return mine.succeededTotal == 3 && other.dead == 1
            })
        func summed() async throws -> [String: KindMinute] {
            try await JobHistory(queue: env.queue).history(minutes: 3).reduce(into: [:]) { sums, minute in
                for (kind, c) in minute.kinds {
                    sums[kind, default: KindMinute()].succeeded += c.succeeded
                    sums[kind, default: KindMinute()].failed += c.failed
                    sums[kind, default: KindMinute()].milliseconds += c.milliseconds
                }
            }
        }
        #expect(
            try await eventually {
                let sums = try await summed()
                return sums["noop"]?.succeeded == 3 && sums["orphan"]?.failed == 1
            })
        let sums = try await summed()
        #expect(sums["noop"]?.failed == 2)
        // Three handlers slept 5 ms each.
        #expect((sums["noop"]?.milliseconds ?? 0) >= 15)
        #expect(try await eventually { try await registry.processes().first.map { ($0.done, $0.failed) } ?? (0, 0) == (3, 3) })
        let history = try await JobHistory(queue: env.queue).history(minutes: 5)
        #expect(history.count == 5)
        #expect(history.map(\.minute) == history.map(\.minute).sorted())
        #expect(history.last!.minute <= Date() && Date().timeIntervalSince(history.last!.minute) < 60)
        let record = try #require(try await registry.processes().first)
        #expect(record.kind == .worker && record.version == "test" && record.concurrency == 5 && record.pid == Int(getpid()))
        #expect(record.queues.map(\.name) == env.queue.catalog.queues)
        // A stopped process leaves the registry.
        await running.stop()
        #expect(try await registry.processes().isEmpty)
        #expect(try await env.redis.send(["EXISTS", env.queue.operationsKeys.process(record.id)]).int == 0)
    }

    @Test func aRegisteredProcessListsItsBusyJobs() async throws {
        let env = try TestEnvironment(kinds: Self.kinds)
        defer { Task { await env.cleanUp() } }
        let running = Self.start(env)
        defer { Task { await running.stop() } }
        let registry = ProcessRegistry(queue: env.queue)
        let id = try #require(
            try await env.queue.enqueue("noop", payload: Self.noop(["sleepMs": .int(10_000)]), options: .init(indexed: true)).id)
        #expect(try await eventually { try await registry.processes().first?.jobs.map(\.id) == [id] })
        let record = try #require(try await registry.processes().first)
        #expect(record.busy == 1 && record.jobs.first?.kind == "noop" && record.jobs.first?.queue == "default")
        #expect(record.state == .running)
        // The process's hash lives two beats.
        let ttl = try await env.redis.send(["PTTL", env.queue.operationsKeys.process(record.id)]).int ?? -1
        #expect(ttl > 0 && ttl <= 6000)
    }
}
