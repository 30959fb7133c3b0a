import ArgumentParser
import Foundation
import JSON
import Logging
import Queue
import Redis

/// `carbscan-bench job-memory`: what a job costs Redis in each state, from `used_memory` before and after many of them.
struct JobMemoryBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "job-memory",
        abstract: "Redis bytes per job: queued plain, queued with a record (the API's jobs), and succeeded (kept for retention).",
        discussion: """
            Enqueues --jobs noop jobs three ways under a key prefix of its own and sums MEMORY USAGE of every key it \
            made (the expiry entry of a kept record, about 24 bytes, is not counted): plain (a stream entry carrying the job), with an owner (a record hash besides, as every job the API \
            enqueues has), and the owned jobs again after one worker process has run them all (the record kept for the \
            kind's retention, the stream trimmed). Prints JSON; MEMORY USAGE of one record in each state besides.
            """)

    @OptionGroup var global: BenchOptions
    @Option(help: "Jobs per measurement.") var jobs: Int = 20_000
    @Option(help: "Payload of every job (noop's schema).") var payload: String = "{}"
    @Option(help: "The carbscan binary that runs the jobs (another build, for a before/after comparison); default: --carbscan.")
    var worker: String?

    func run() async throws {
        BenchOptions.bootstrapLogging()
        let redis = try global.redis(logger: Logger(label: "carbscan.bench"))
        let prefix = "carbscan-bench-memory"
        let queue = JobQueue(redis: redis, catalog: try global.catalog(), options: QueueOptions(prefix: prefix))
        let value = try JSONValue(parsing: payload)
        try await redis.unlinkKeys(matching: "\(prefix):*")
        defer { redis.close() }

        /// MEMORY USAGE (exact: SAMPLES 0) of every key under the prefix: what the jobs hold, whatever else Redis
        /// is doing (used_memory moved by tens of bytes per job between runs, with lazy frees and other clients).
        func keyBytes() async throws -> Int {
            var total = 0
            try await redis.forEachKeyBatch(matching: "\(prefix):*") { keys in
                let sizes = try await redis.pipeline(keys.map { ["MEMORY", "USAGE", $0, "SAMPLES", "0"] })
                total += sizes.compactMap(\.int).reduce(0, +)
            }
            return total
        }
        func recordBytes(_ id: JobID) async throws -> Int {
            try await redis.send("MEMORY", "USAGE", QueueKeys(prefix: prefix, queue: "default").job(id), "SAMPLES", "0").int ?? 0
        }
        func enqueue(owned: Bool) async throws -> (perJob: Double, first: JobID) {
            var first: JobID?
            for start in stride(from: 0, to: jobs, by: 1000) {
                let batch = (start..<min(jobs, start + 1000)).map { index in
                    ("noop", value, EnqueueOptions(owner: owned ? "user-\(index % 100)" : nil))
                }
                let results = try await queue.enqueue(batch)
                if first == nil, case .enqueued(let id)? = results.first { first = id }
            }
            return (Double(try await keyBytes()) / Double(jobs), first!)
        }

        let plain = try await enqueue(owned: false)
        try await redis.unlinkKeys(matching: "\(prefix):*")
        let owned = try await enqueue(owned: true)
        let queuedRecord = try await recordBytes(owned.first)

        var environment = ProcessInfo.processInfo.environment
        environment["LOG_LEVEL"] = "warning"
        environment["CARBSCAN_PREFIX"] = prefix
        environment["REDIS_URL"] = global.redisURL
        environment["CARBSCAN_JOBS_DIR"] = global.jobsDir
        let process = Process()
        process.executableURL = worker.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath() } ?? global.carbscanExecutable()
        process.arguments = ["work", "--queues", "default", "--concurrency", "100"]
        process.environment = environment
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        let deadline = ContinuousClock.now + .seconds(300)
        while try await queue.stats().first(where: { $0.queue == "default" })?.succeededTotal ?? 0 < jobs {
            guard ContinuousClock.now < deadline else { throw BenchError("the worker did not finish \(jobs) jobs in 300 s") }
            try await Task.sleep(for: .milliseconds(100))
        }
        process.terminate()
        process.waitUntilExit()
        let succeeded = Double(try await keyBytes()) / Double(jobs)
        let finishedRecord = try await recordBytes(owned.first)
        let fields =
            try await redis.send("HKEYS", QueueKeys(prefix: prefix, queue: "default").job(owned.first)).array?.compactMap(\.string) ?? []
        try await redis.unlinkKeys(matching: "\(prefix):*")

        let summary: [String: Any] = [
            "jobs": jobs, "payload_bytes": payload.utf8.count,
            "queued_plain_bytes_per_job": plain.perJob.rounded(),
            "queued_with_record_bytes_per_job": owned.perJob.rounded(),
            "succeeded_kept_bytes_per_job": succeeded.rounded(),
            "record_memory_usage_queued": queuedRecord, "record_memory_usage_succeeded": finishedRecord,
            "succeeded_record_fields": fields.sorted(),
        ]
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.prettyPrinted, .sortedKeys])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
