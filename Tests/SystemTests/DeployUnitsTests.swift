import Foundation
import Queue
import Redis
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The system run the way `ops/deploy/systemd` says: each unit's `ExecStartPre`/`ExecStart` with its `Environment=`
/// and `EnvironmentFile=` (the files stand in for /etc/carbscan), the binary path swapped for the built one, a clean
/// environment as systemd gives, and SIGTERM as its `KillSignal`.
@Suite struct DeployUnitsTests {
    static let unitsDirectory = CarbScanBinary.packageRoot.appendingPathComponent("ops/deploy/systemd")
    /// Flags the units use that another branch adds (ops-metrics): dropped from the command line while the binary's
    /// `--help` lacks them, as ops/deploy/check.py tolerates them. Any other unknown flag fails the test.
    static let pendingFlags: Set<String> = []

    struct Started {
        let name: String
        let process: RunningProcess
        let timeoutStop: Duration
    }

    @Test func theUnitsRunTheSystemAndSIGTERMStopsEachPromptlyLosingNoJob() async throws {
        try await withScratchDatabase { databaseURL in
            let prefix = "deploy-\(UUID().uuidString.prefix(8))"
            let redis = try RedisClient(url: TestServices.redisURL)
            defer { Task { await removeKeys(prefix: prefix, redis: redis) } }
            let etc = FileManager.default.temporaryDirectory.appendingPathComponent("carbscan-etc-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: etc, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: etc) }
            let apiPort = CarbScanBinary.freePort()
            let jobs = CarbScanBinary.packageRoot.appendingPathComponent("jobs").path
            // /etc/carbscan/env as env.example lays it out, and two workers' instance files: `a` serves the default
            // queue, `b` the unit's default (every queue). Short grace periods keep the test quick; the units' own
            // (25 s, TimeoutStopSec 35) are checked against each other by ops/deploy/check.sh.
            try """
            REDIS_URL=\(TestServices.redisURL)
            DATABASE_URL=\(databaseURL)
            CARBSCAN_PREFIX=\(prefix)
            CARBSCAN_JOBS_DIR=\(jobs)
            CARBSCAN_PORT=\(apiPort)
            JWT_SECRET=\(String(repeating: "d", count: 40))
            SCHEDULER_METRICS_PORT=\(CarbScanBinary.freePort())
            LOG_LEVEL=info
            """.write(to: etc.appendingPathComponent("env"), atomically: true, encoding: .utf8)
            try "WORKER_OPTIONS=--queues default\nWORKER_GRACE=2\nWORKER_METRICS_PORT=\(CarbScanBinary.freePort())\n"
                .write(to: etc.appendingPathComponent("worker-a.env"), atomically: true, encoding: .utf8)
            try "WORKER_GRACE=3\nWORKER_METRICS_PORT=\(CarbScanBinary.freePort())\n"
                .write(to: etc.appendingPathComponent("worker-b.env"), atomically: true, encoding: .utf8)
            let files: (String) -> URL? = { path in
                path.hasPrefix("/etc/carbscan/") ? etc.appendingPathComponent(String(path.dropFirst("/etc/carbscan/".count))) : nil
            }

            var started: [Started] = []
            defer { for unit in started where unit.process.process.isRunning { unit.process.signal(SIGKILL) } }
            for (file, instance) in [
                ("carbscan-api.service", nil), ("carbscan-scheduler.service", nil), ("carbscan-worker@.service", "a"),
                ("carbscan-worker@.service", "b"),
            ] as [(String, String?)] {
                let unit = try SystemdUnit(contentsOf: Self.unitsDirectory.appendingPathComponent(file))
                let environment = try unit.environment(instance: instance, files: files)
                let name = instance.map { file.replacingOccurrences(of: "@", with: "@\($0)") } ?? file
                #expect(unit.service("KillSignal") == ["SIGTERM"], "\(name)")
                for line in unit.service("ExecStartPre") {
                    let argv = try await runnable(try unit.command(line, instance: instance, environment: environment), unit: name)
                    let result = try await CarbScanBinary.run(Array(argv.dropFirst()), environment: environment)
                    #expect(result.status == 0, "\(name) ExecStartPre \(argv): \(result.stderr)")
                }
                let line = try #require(unit.service("ExecStart").first, "\(name) has no ExecStart")
                let argv = try await runnable(try unit.command(line, instance: instance, environment: environment), unit: name)
                let timeoutStop = try #require(unit.service("TimeoutStopSec").first.flatMap(Int.init), "\(name): TimeoutStopSec")
                started.append(
                    Started(name: name, process: try launch(argv, environment: environment), timeoutStop: .seconds(timeoutStop)))
            }

            let queue = JobQueue(
                redis: redis, catalog: try JobCatalog.load(directory: jobs), options: QueueOptions(prefix: prefix))
            let health = URL(string: "http://127.0.0.1:\(apiPort)/api/mobile/v1/health")!
            #expect(
                try await eventually(timeout: .seconds(60)) {
                    guard let (_, response) = try? await URLSession.shared.data(from: health) else { return false }
                    return (response as? HTTPURLResponse)?.statusCode == 200
                }, "the API never answered health; log: \(started[0].process.output)")
            #expect(
                try await eventually(timeout: .seconds(60)) { try await queue.consumers() == 2 },
                "both workers read the default queue; logs: \(started.map(\.process.output))")

            // The Kubernetes API probes' paths answer 200 on the running API (readiness: health; liveness: config).
            let manifest = try String(
                contentsOf: CarbScanBinary.packageRoot.appendingPathComponent("ops/deploy/kubernetes/api.yaml"), encoding: .utf8)
            let probePaths = Set(manifest.matches(of: /httpGet: \{ path: (\/[^,\s]+),/).map { String($0.output.1) })
            #expect(probePaths.count >= 2, "\(probePaths)")
            for path in probePaths {
                let (_, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(apiPort)\(path)")!)
                #expect((response as? HTTPURLResponse)?.statusCode == 200, "probe \(path)")
            }

            // Each worker runs what its instance file and the unit's defaults say: `a` the default queue, `b` every one.
            func startLine(_ unit: Started) -> String {
                unit.process.output.split(separator: "\n").first { $0.contains(#""msg":"worker started""#) }.map(String.init) ?? ""
            }
            let (workerA, workerB) = (started[2], started[3])
            // A worker logs its start after it joined the queue's group (and one more Redis call): wait for the lines.
            #expect(try await eventually { !startLine(workerA).isEmpty && !startLine(workerB).isEmpty })
            #expect(startLine(workerA).contains(#""queues":"default""#), "\(workerA.process.output)")
            #expect(startLine(workerA).contains(#""concurrency":"2500""#), "\(workerA.process.output)")
            #expect(["ai", "default", "maintenance"].allSatisfy(startLine(workerB).contains), "\(workerB.process.output)")

            // Jobs enqueued with the operator's command and the units' environment file: quick ones that every worker
            // finishes within its grace, and long ones that no grace covers and must be handed back.
            let envFile = try SystemdUnit(contentsOf: Self.unitsDirectory.appendingPathComponent("carbscan-worker@.service"))
                .environment(instance: nil, files: files)
            func enqueue(_ payload: String, count: Int) async throws -> [String] {
                let result = try await CarbScanBinary.run(
                    ["jobs", "enqueue", "noop", "--payload", payload, "--count", String(count)], environment: envFile)
                #expect(result.status == 0, "\(result.stderr)")
                return result.stdout.split(separator: "\n").map(String.init)
            }
            let warmUp = try await enqueue(#"{"sleepMs": 10}"#, count: 20)
            #expect(
                try await eventually(timeout: .seconds(30)) {
                    try await queue.defaultStats().succeededTotal == warmUp.count
                })
            // The long ones first: once they run, the quick ones run beside them or have finished (on a loaded machine the
            // second command may start late); either way each quick one is done within the grace period of 2–3 s.
            let long = try await enqueue(#"{"sleepMs": 120000}"#, count: 4)
            let quick = try await enqueue(#"{"sleepMs": 1500}"#, count: 8)
            let longIDs = try long.map(jobID)
            #expect(
                try await eventually(timeout: .seconds(60)) {
                    for id in longIDs where try await queue.record(id)?.status != .running { return false }
                    for id in try quick.map(jobID) where try await queue.record(id)?.status == .queued { return false }
                    return true
                })

            // SIGTERM each, as systemd's `systemctl stop` does, workers first (the busy ones), then the API and the
            // scheduler; each must exit 0 well within its TimeoutStopSec (the time systemd gives before SIGKILL).
            var stops: [String] = []
            for unit in started.reversed() {
                let signalled = ContinuousClock.now
                unit.process.signal(SIGTERM)
                let status = await unit.process.waitForExit(timeout: unit.timeoutStop)
                let took = ContinuousClock.now - signalled
                let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
                stops.append("\(unit.name) \(String(format: "%.2f", seconds)) s")
                let exit = status.map(String.init) ?? "none: killed at TimeoutStopSec"
                #expect(status == 0, "\(unit.name) exit \(exit): \(unit.process.output)")
                #expect(took < unit.timeoutStop, "\(unit.name) took \(took)")
            }
            print("DeployUnitsTests: SIGTERM to exit: \(stops.joined(separator: ", "))")

            // Nothing lost: the quick jobs succeeded, the long ones are queued again, unattempted, for the next worker.
            for id in try (quick + warmUp).map(jobID) { #expect(try await queue.record(id)?.status == .succeeded, "\(id)") }
            for id in try long.map(jobID) {
                let record = try #require(try await queue.record(id))
                #expect(record.status == .queued && record.attempts == 0, "\(id): \(record.status) after \(record.attempts) attempts")
            }
            let stats = try await queue.defaultStats()
            #expect(stats.queued == long.count && stats.running == 0 && stats.failedTotal == 0 && stats.dead == 0, "\(stats)")
            let logs = started.map(\.process.output).joined()
            #expect(logs.contains("handing back jobs"))
            #expect(!logs.contains(#""level":"error""#), "\(logs)")
        }
    }

    func jobID(_ text: String) throws -> JobID { try #require(JobID(rawValue: text), "not a job id: \(text)") }

    /// argv with the unit's binary path swapped for the built one and flags pending another branch dropped; a flag
    /// the subcommand's `--help` does not list otherwise fails the test.
    func runnable(_ argv: [String], unit: String) async throws -> [String] {
        #expect(argv.first == "/usr/local/bin/carbscan", "\(unit) runs \(argv.first ?? "nothing")")
        guard argv.count >= 2 else { throw UnitError("\(unit): no subcommand") }
        let help = try await CarbScanBinary.run([argv[1], "--help"], environment: [:]).stdout
        var result = [CarbScanBinary.url.path, argv[1]]
        var index = 2
        while index < argv.count {
            let word = argv[index]
            let flag = String(word.split(separator: "=", maxSplits: 1)[0])
            let takesValue = word.hasPrefix("--") && !word.contains("=") && index + 1 < argv.count && !argv[index + 1].hasPrefix("--")
            if word.hasPrefix("--") && !help.contains(flag) {
                #expect(Self.pendingFlags.contains(flag), "\(unit): `carbscan \(argv[1])` has no option \(flag)")
                index += takesValue ? 2 : 1
                continue
            }
            result.append(word)
            index += 1
        }
        return result
    }

    /// Starts argv in the environment systemd would give it (no variables of the test process but PATH).
    func launch(_ argv: [String], environment: [String: String]) throws -> RunningProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        process.environment = environment.merging(["PATH": "/usr/local/bin:/usr/bin:/bin"]) { unit, _ in unit }
        return try RunningProcess.run(process, logNamed: "carbscan-unit")
    }
}
