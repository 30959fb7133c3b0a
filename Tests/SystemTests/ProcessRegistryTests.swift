import Foundation
import JSON
import Queue
import Redis
import TestSupport
import Testing

/// Real `carbscan work` processes in the registry: listed, killed, stopped, and the operator commands' refusals.
@Suite(.serialized) struct ProcessRegistryTests {
    static func decode(_ json: String) throws -> [ProcessRecord] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode([ProcessRecord].self, from: Data(json.utf8))
    }

    @Test func theRegistryListsTwoWorkersWithTheirFields() async throws {
        let (redis, prefix, baseEnvironment, queue) = try ChaosTests.shortLeaseRun()
        var environment = baseEnvironment
        environment["CARBSCAN_VERSION"] = "1.2.3-test"
        var workers: [RunningProcess] = []
        defer {
            for worker in workers { worker.signal(SIGKILL) }
            Task { await removeKeys(prefix: prefix, redis: redis) }
        }
        for concurrency in [3, 4] {
            workers.append(
                try CarbScanBinary.start(
                    ["work", "--queues", "default=2,mail", "--concurrency", "\(concurrency)", "--heartbeat", "1"],
                    environment: environment))
        }
        let registry = ProcessRegistry(queue: queue)
        #expect(try await eventually(timeout: .seconds(30)) { try await registry.processes().count == 2 })
        let id = try #require(
            try await queue.enqueue("noop", payload: .object(["sleepMs": .int(8000)]), options: .init(indexed: true)).id)
        #expect(try await eventually(timeout: .seconds(15)) { try await registry.processes().contains { $0.jobs.map(\.id) == [id] } })
        let listed = try await CarbScanBinary.run(["processes", "--json"], environment: environment)
        #expect(listed.status == 0, "\(listed.stderr)")
        let processes = try Self.decode(listed.stdout)
        #expect(Set(processes.map(\.pid)) == Set(workers.map { Int($0.pid) }))
        #expect(Set(processes.map(\.concurrency)) == [3, 4])
        for process in processes {
            #expect(process.kind == .worker && process.state == .running && process.version == "1.2.3-test")
            #expect(process.host == ProcessInfo.processInfo.hostName)
            #expect(process.queues == [ServedQueue(name: "default", limit: 2), ServedQueue(name: "mail", limit: nil)])
            #expect(process.id.hasPrefix("\(process.host):\(process.pid):"))
            #expect(Date().timeIntervalSince(process.lastBeatAt) < 30 && process.startedAt <= process.lastBeatAt)
        }
        let busy = try #require(processes.first { !$0.jobs.isEmpty })
        #expect(busy.busy == 1 && busy.jobs.first?.kind == "noop" && busy.jobs.first?.queue == "default")
        let table = try await CarbScanBinary.run(["processes"], environment: environment)
        #expect(table.status == 0)
        #expect(table.stdout.contains("busy") && table.stdout.contains("default=2,mail"))
        for process in processes { #expect(table.stdout.contains(process.id)) }
        #expect(try await eventually(timeout: .seconds(30)) { try await registry.processes().map(\.done).reduce(0, +) == 1 })
    }

    @Test func aKilledWorkerDropsOutWithinTwoBeats() async throws {
        let (redis, prefix, environment, queue) = try ChaosTests.shortLeaseRun()
        var workers: [RunningProcess] = []
        defer {
            for worker in workers { worker.signal(SIGKILL) }
            Task { await removeKeys(prefix: prefix, redis: redis) }
        }
        for _ in 0..<2 {
            workers.append(try CarbScanBinary.start(["work", "--queues", "default", "--heartbeat", "1"], environment: environment))
        }
        let registry = ProcessRegistry(queue: queue)
        #expect(try await eventually(timeout: .seconds(30)) { try await registry.processes().count == 2 })
        let victim = try #require(try await registry.processes().first { $0.pid == Int(workers[0].pid) })
        // Its hash outlives its last beat by two beats at most.
        let ttl = try await redis.send(["PTTL", queue.operationsKeys.process(victim.id)]).int ?? -1
        #expect(ttl > 0 && ttl <= 2000)
        workers[0].signal(SIGKILL)
        #expect(try await eventually(timeout: .seconds(10)) { try await registry.processes().map(\.pid) == [Int(workers[1].pid)] })
        // The reader forgot the dead member.
        #expect(try await redis.send(["ZSCORE", queue.operationsKeys.processes, victim.id]).isNull)
    }

    @Test func stopMakesTheWorkerExitZeroAndLeave() async throws {
        let (redis, prefix, environment, queue) = try ChaosTests.shortLeaseRun()
        var workers: [RunningProcess] = []
        defer {
            for worker in workers { worker.signal(SIGKILL) }
            Task { await removeKeys(prefix: prefix, redis: redis) }
        }
        workers.append(try CarbScanBinary.start(["work", "--queues", "default", "--heartbeat", "1"], environment: environment))
        let registry = ProcessRegistry(queue: queue)
        #expect(try await eventually(timeout: .seconds(30)) { try await registry.processes().count == 1 })
        let id = try #require(
            try await queue.enqueue("noop", payload: .object(["sleepMs": .int(1000)]), options: .init(indexed: true)).id)
        #expect(try await eventually { try await queue.record(id)?.status == .running })
        let process = try #require(try await registry.processes().first)
        let stop = try await CarbScanBinary.run(
            ["processes", "stop", String(process.id.prefix(process.id.count - 2))], environment: environment)
        #expect(stop.status == 0, "\(stop.stderr)")
        #expect(stop.stdout.contains("\(process.id): told to stop"))
        #expect(await workers[0].waitForExit(timeout: .seconds(30)) == 0)
        // The running job finished within the grace period, and the process left the registry.
        #expect(try await queue.record(id)?.status == .succeeded)
        #expect(try await registry.processes().isEmpty)
        #expect(try await redis.send(["ZCARD", queue.operationsKeys.processes]).int == 0)
    }

    @Test func aSchedulerIsListedAndStopsOnASignal() async throws {
        let (redis, prefix, environment, queue) = try ChaosTests.shortLeaseRun()
        var processes: [RunningProcess] = []
        defer {
            for process in processes { process.signal(SIGKILL) }
            Task { await removeKeys(prefix: prefix, redis: redis) }
        }
        processes.append(try CarbScanBinary.start(["schedule", "--heartbeat", "1"], environment: environment))
        let registry = ProcessRegistry(queue: queue)
        #expect(try await eventually(timeout: .seconds(30)) { try await registry.processes().count == 1 })
        let scheduler = try #require(try await registry.processes().first)
        #expect(scheduler.kind == .scheduler && scheduler.pid == Int(processes[0].pid) && scheduler.queues.isEmpty)
        #expect(scheduler.state == .running && scheduler.concurrency == 0)
        let stop = try await CarbScanBinary.run(["processes", "stop", scheduler.id], environment: environment)
        #expect(stop.status == 0, "\(stop.stderr)")
        #expect(await processes[0].waitForExit(timeout: .seconds(30)) == 0)
        #expect(try await registry.processes().isEmpty)
    }

    @Test func theOperatorCommandsRefuseBadInputClearly() async throws {
        let (redis, prefix, environment, queue) = try ChaosTests.shortLeaseRun()
        defer { Task { await removeKeys(prefix: prefix, redis: redis) } }
        let pause = try await CarbScanBinary.run(["queues", "pause", "nope"], environment: environment)
        #expect(pause.status == 65 && pause.stderr.contains("unknown queue 'nope'"))
        let stop = try await CarbScanBinary.run(["processes", "stop", "nobody"], environment: environment)
        #expect(stop.status == 4 && stop.stderr.contains("no live process 'nobody'"))
        let cancel = try await CarbScanBinary.run(["jobs", "cancel", UUID().uuidString.lowercased()], environment: environment)
        #expect(cancel.status == 4 && cancel.stderr.contains("no job"))
        let badID = try await CarbScanBinary.run(["jobs", "cancel", "x"], environment: environment)
        #expect(badID.status == 65)
        let heartbeat = try await CarbScanBinary.run(["work", "--heartbeat", "0"], environment: environment)
        #expect(heartbeat.status == 64 && heartbeat.stderr.contains("--heartbeat"))
        // The CLI round trip of pause and cancel.
        #expect(try await CarbScanBinary.run(["queues", "pause", "mail"], environment: environment).status == 0)
        let listed = try await CarbScanBinary.run(["queues", "--json"], environment: environment)
        #expect(listed.stdout.contains("\"paused\" : true"))
        #expect(try await QueueControl(queue: queue).pausedQueues() == ["mail"])
        let id = try #require(try await queue.enqueue("noop", payload: .object([:]), options: .init(delay: .seconds(60))).id)
        let cancelled = try await CarbScanBinary.run(["jobs", "cancel", id.rawValue], environment: environment)
        #expect(cancelled.status == 0 && cancelled.stdout.contains("cancelled (it was delayed)"))
        let again = try await CarbScanBinary.run(["jobs", "cancel", id.rawValue], environment: environment)
        #expect(again.status == 65 && again.stderr.contains("already finished (cancelled)"))
    }
}
