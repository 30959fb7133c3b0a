import ArgumentParser
import Durations
import Foundation
import JSON
import Logging
import Queue
import Redis

/// `carbscan-bench queue`: the queue benchmark, with the definitions `ops/bench/sidekiq/bench.rb` uses for
/// Sidekiq, so the two compare on one machine and one Redis. Its workers and producer are `carbscan` processes.
struct QueueBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Enqueue, process and pickup-latency benchmark of the queue engine; prints JSON.",
        discussion: """
            bulk enqueue: 20,000 noop jobs from this process in batches of 1,000. single enqueue: 20,000 one by one,
            each awaited, between two runs of `redis-benchmark -c 1 -P 1` LPUSH (and, separately, with 64 in flight). process: 2 worker processes already running and idle;
            a separate producer process bulk-enqueues 20,000 noop jobs whose handler INCRs a counter after the job;
            jobs/s from the first counted completion to the last (polled every 5 ms). pickup: 2,000 jobs at 200/s to
            idle workers, each carrying its enqueue time; latency measured when the job starts. CPU: utime+stime of the
            worker processes over the process phase, per job; Redis CPU: the server's used_cpu_sys + used_cpu_user over
            the bulk-enqueue phase and over the process phase (producer included), per job. Uses its own key prefix;
            never touches other keys.
            """)

    @OptionGroup var global: BenchOptions
    @Option(help: "Jobs per enqueue/process measurement.") var jobs: Int = 20_000
    @Option(help: "Runs; figures are medians.") var runs: Int = 3
    @Option(help: "Worker processes.") var workers: Int = 2
    @Option(help: "Concurrency per worker process (default: `carbscan work`'s).") var concurrency: Int = WorkerOptions.defaultConcurrency
    @Option(help: "Rounds of the single-enqueue figure, each between two one-round-trip yardsticks (more flatter us).")
    var singleRounds: Int = 1
    @Option(help: "Pickup-latency jobs.") var pickupJobs: Int = 2_000
    @Option(help: "Pickup-latency send rate (jobs/s).") var pickupRate: Double = 200
    @Option(help: "Figures to measure, comma-separated: bulk, single, process, pickup (for profiling one of them).")
    var only: String = "bulk,single,process,pickup"
    @Flag(help: "Start the workers with metrics on (--metrics-port 0): the instrumentation's cost is the difference.")
    var workerMetrics = false
    @Flag(
        help: """
            Count the process phase's finished jobs from the queue's counts, not from a counter each job INCRs (one key             on one node: on a cluster it would load one master more than the others).
            """)
    var countFromStats = false

    func run() async throws {
        let figures = Set(only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        let known: Set = ["bulk", "single", "process", "pickup"]
        guard !figures.isEmpty, figures.isSubset(of: known) else {
            throw ValidationError("--only takes a comma-separated list of \(known.sorted().joined(separator: ", "))")
        }
        BenchOptions.bootstrapLogging()
        let logger = Logger(label: "carbscan.bench")
        let catalog = try global.catalog()
        let redis = try global.redis(logger: logger)
        let prefix = "carbscan-bench"
        let queue = JobQueue(redis: redis, catalog: catalog, options: QueueOptions(prefix: prefix))
        // The enqueue figures' queue waits for replicas when asked (`--durable-enqueue`), as a producer's would.
        var enqueueOptions = try global.queueOptions()
        enqueueOptions.prefix = prefix + "-enqueue"
        let enqueueQueue = JobQueue(redis: redis, catalog: catalog, options: enqueueOptions)
        try await clear(prefix, redis)
        try await clear(prefix + "-enqueue", redis)

        let executable = global.carbscanExecutable()
        var environment = ProcessInfo.processInfo.environment
        environment["LOG_LEVEL"] = environment["BENCH_WORKER_LOG_LEVEL"] ?? "warning"
        environment["CARBSCAN_PREFIX"] = prefix
        environment["REDIS_URL"] = global.redisURL
        environment["CARBSCAN_JOBS_DIR"] = global.jobsDir
        var processes: [Process] = []
        defer {
            for p in processes where p.isRunning { p.terminate() }
            for p in processes { p.waitUntilExit() }
        }
        for _ in 0..<workers {
            let p = Process()
            p.executableURL = executable
            p.arguments =
                ["work", "--queues", "default", "--concurrency", String(concurrency)] + (workerMetrics ? ["--metrics-port", "0"] : [])
            p.environment = environment
            try p.run()
            processes.append(p)
        }
        // Ready: every worker reads the queue, and (when processing is measured) took part in a warm-up of 1,000 jobs.
        try await waitForConsumers(workers, queue: queue)
        if !figures.isDisjoint(with: ["process", "pickup"]) {
            _ = try await processBatch(1000, queue: queue, environment: environment, executable: executable, pids: [])
        }

        var results: [[String: Double]] = []
        for run in 1...runs {
            var r: [String: Double] = [:]
            if figures.contains("bulk") {
                let before = try await redisCPU(redis)
                r["bulk_enqueue_per_s"] = try await bulkEnqueue(enqueueQueue)
                r["redis_cpu_us_per_job_bulk_enqueue"] = (try await redisCPU(redis).reduce(0, +) - before.reduce(0, +)) * 1e6 / Double(jobs)
            }
            if figures.contains("single") {
                r.merge(try await singlePhase(enqueueQueue), uniquingKeysWith: { $1 })
                try await clear(prefix + "-enqueue", redis)
                r["single_enqueue_64_in_flight_per_s"] = try await singleEnqueue(enqueueQueue, count: jobs, inFlight: 64)
            }
            try await clear(prefix + "-enqueue", redis)
            if figures.contains("process") {
                let before = try await redisCPU(redis)
                let process = try await processBatch(
                    jobs, queue: queue, environment: environment, executable: executable, pids: processes.map(\.processIdentifier))
                r["process_per_s"] = process.rate
                r["worker_cpu_us_per_job"] = process.cpuMicrosPerJob
                // Polling stops at the last job; the recording of its outcome may follow a moment later.
                let perNode = zip(try await redisCPU(redis), before).map { ($0 - $1) * 1e6 / Double(jobs) }
                r["redis_cpu_us_per_job_process"] = perNode.reduce(0, +)
                // On a cluster: each master's share, the busiest's and the least busy's.
                r["redis_nodes"] = Double(perNode.count)
                r["redis_cpu_us_per_job_process_busiest_node"] = perNode.max() ?? 0
                r["redis_cpu_us_per_job_process_idlest_node"] = perNode.min() ?? 0
            }
            if figures.contains("pickup") {
                let latency = try await pickup(queue)
                r["pickup_p50_ms"] = latency.p50
                r["pickup_p99_ms"] = latency.p99
                r["pickup_max_ms"] = latency.max
            }
            FileHandle.standardError.write(Data("run \(run): \(r)\n".utf8))
            results.append(r)
        }
        try await clear(prefix, redis)
        try await clear(prefix + "-enqueue", redis)

        var summary: [String: Any] = [
            "system": "carbscan (Swift, hiredis, Redis Streams)", "workers": workers, "concurrency_per_worker": concurrency,
            "worker_metrics": workerMetrics, "durable_enqueue_replicas": try global.durableReplicas(),
            "jobs": jobs, "runs": results,
        ]
        for key in results[0].keys { summary[key] = median(results.compactMap { $0[key] }) }
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys, .prettyPrinted])
        print(String(decoding: data, as: UTF8.self))
        redis.close()
    }

    private func payload(_ fields: [String: JSONValue]) -> JSONValue { .object(fields) }

    private func bulkEnqueue(_ queue: JobQueue) async throws -> Double {
        let job = (kind: "noop", payload: payload([:]), options: EnqueueOptions())
        let start = ContinuousClock.now
        var sent = 0
        while sent < jobs {
            let n = min(1000, jobs - sent)
            _ = try await queue.enqueue(Array(repeating: job, count: n))
            sent += n
        }
        return Double(jobs) / (ContinuousClock.now - start).timeInterval
    }

    /// `count` enqueues, `inFlight` at a time, each awaited before its task's next. One at a time, the loop runs on a
    /// Redis connection's thread (`RedisClient.executor`), as a producer that enqueues one job at a time should.
    func singleEnqueue(_ queue: JobQueue, count: Int, inFlight: Int) async throws -> Double {
        let perTask = count / inFlight
        if inFlight == 1 {
            return try await withTaskExecutorPreference(queue.redis.executor) {
                let start = ContinuousClock.now
                for _ in 0..<perTask { _ = try await queue.enqueue("noop", payload: .object([:])) }
                return Double(perTask) / (ContinuousClock.now - start).timeInterval
            }
        }
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<inFlight {
                group.addTask {
                    for _ in 0..<perTask { _ = try await queue.enqueue("noop", payload: .object([:])) }
                }
            }
            try await group.waitForAll()
        }
        return Double(perTask * inFlight) / (ContinuousClock.now - start).timeInterval
    }

    private func processBatch(
        _ count: Int, queue: JobQueue, environment: [String: String], executable: URL, pids: [Int32]
    ) async throws -> (rate: Double, cpuMicrosPerJob: Double) {
        let counter = "carbscan-bench:done"
        let finished = { () async throws -> Int in
            if countFromStats { return try await queue.stats().first { $0.queue == "default" }?.succeededTotal ?? 0 }
            return try await queue.redis.send(["GET", counter]).int ?? 0
        }
        let base = try await finished()
        let cpuBefore = pids.map(cpuTicks).reduce(0, +)
        // A separate producer process, so producing does not delay this process's polling.
        let producer = Process()
        producer.executableURL = executable
        producer.arguments = [
            "jobs", "enqueue", "noop", "--count", String(count), "--payload", countFromStats ? "{}" : "{\"counter\":\"\(counter)\"}",
        ]
        producer.environment = environment
        producer.standardOutput = FileHandle.nullDevice
        try producer.run()
        var first: ContinuousClock.Instant?
        var last: ContinuousClock.Instant?
        let deadline = ContinuousClock.now + .seconds(120)
        while last == nil && ContinuousClock.now < deadline {
            let done = try await finished()
            let now = ContinuousClock.now
            if first == nil && done > base { first = now }
            if done >= base + count { last = now }
            if last == nil { try await Task.sleep(for: .milliseconds(5)) }
        }
        let cpuAfter = pids.map(cpuTicks).reduce(0, +)
        producer.waitUntilExit()
        guard let first, let last, last > first else { throw BenchError("process phase did not complete") }
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (Double(count) / (last - first).timeInterval, Double(cpuAfter - cpuBefore) / ticksPerSecond * 1e6 / Double(count))
    }

    private func pickup(_ queue: JobQueue) async throws -> (p50: Double, p99: Double, max: Double) {
        let list = "carbscan-bench:latency"
        _ = try await queue.redis.send(["DEL", list])
        let interval = 1.0 / pickupRate
        let start = ContinuousClock.now
        for i in 0..<pickupJobs {
            let due = start + .milliseconds(Int64(Double(i) * interval * 1000))
            let now = ContinuousClock.now
            if due > now { try await Task.sleep(for: due - now) }
            _ = try await queue.enqueue(
                "noop", payload: payload(["stamp": .double(Date().timeIntervalSince1970), "latency": .string(list)]))
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while try await queue.redis.send(["LLEN", list]).int ?? 0 < pickupJobs, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let values = (try await queue.redis.send(["LRANGE", list, "0", "-1"]).array ?? []).compactMap(\.int).sorted()
        guard !values.isEmpty else { throw BenchError("no pickup latencies recorded") }
        func rank(_ p: Double) -> Double { Double(values[max(0, Int((p * Double(values.count)).rounded(.up)) - 1)]) / 1000 }
        return (rank(0.5), rank(0.99), Double(values.last!) / 1000)
    }

    private func waitForConsumers(_ count: Int, queue: JobQueue) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            // Workers make their consumer on every shard before they read: the last is made last.
            let stream = queue.keys(queue.shards(of: "default").last ?? "default").stream
            let reply = try? await queue.redis.send(["XINFO", "CONSUMERS", stream, QueueKeys.group])
            if (reply?.array?.count ?? 0) >= count { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("workers did not start")
    }

    /// `redis-benchmark -c 1 -P 1` of `test` (`-t NAME` or a whole command) on our Redis: one awaited round trip at a
    /// time, in C, the physical limit of a one-by-one producer. Requests per second; nil without redis-benchmark.
    /// `redis-benchmark -c 1 -P 1` running `test` `requests` times: its requests per second (nil without the tool).
    func yardstick(_ test: [String], answer: String, requests: Int) async throws -> Double? {
        let configuration = try RedisConfiguration(url: global.redisURL)
        let candidates = ["/usr/bin/redis-benchmark", "/usr/local/bin/redis-benchmark"]
        guard let path = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        var arguments = ["-h", configuration.host, "-p", String(configuration.port), "-c", "1", "-P", "1", "-n", String(requests)]
        if let password = configuration.password { arguments += ["-a", password] }
        process.arguments = arguments + ["--csv"] + test
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            process.terminationHandler = { _ in done.resume() }
            do { try process.run() } catch { done.resume() }
        }
        // `"LPUSH","36900.37",…`, or the whole command in the first column.
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).first { $0.hasPrefix("\"" + answer) }
        return line.flatMap { Double($0.split(separator: ",")[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) }
    }

    /// Seconds of CPU each Redis server has used (the one server, or every master of a cluster), main and background
    /// threads (`INFO cpu`).
    private func redisCPU(_ redis: RedisClient) async throws -> [Double] {
        try await redis.onEveryMaster(["INFO", "cpu"]).map { reply in
            (reply.string ?? "").split(whereSeparator: \.isNewline).reduce(0) { total, line in
                let parts = line.split(separator: ":")
                guard parts.count == 2, parts[0] == "used_cpu_sys" || parts[0] == "used_cpu_user" else { return total }
                return total + (Double(parts[1]) ?? 0)
            }
        }
    }

    private func clear(_ prefix: String, _ redis: RedisClient) async throws {
        try await redis.unlinkKeys(matching: "\(prefix):*")
    }
}

func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    return s.isEmpty ? 0 : (s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2)
}

/// utime + stime of a process, in clock ticks, from /proc/PID/stat.
private func cpuTicks(_ pid: Int32) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command name: state is field 3, utime 14 and stime 15 (1-based over the whole line).
    guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
    return user + system
}
