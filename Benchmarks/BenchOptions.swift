import ArgumentParser
import Foundation
import Glibc
import Logging
import Queue
import Redis

/// What the benchmarks share with `carbscan`'s own options: where Redis and the job files are, and the durable enqueue,
/// each falling back to the variable `carbscan` reads, then to the local default of `ops/services.sh`.
struct BenchOptions: ParsableArguments {
    @Option(help: "Redis URL, redis://[:password@]host:port/db (env REDIS_URL).")
    var redisURL: String = ProcessInfo.processInfo.environment["REDIS_URL"] ?? "redis://127.0.0.1:56379/0"

    @Option(help: "Folder of the job kind files (env CARBSCAN_JOBS_DIR).")
    var jobsDir: String = ProcessInfo.processInfo.environment["CARBSCAN_JOBS_DIR"] ?? "jobs"

    @Option(help: "Replicas that must acknowledge an enqueue before it succeeds (WAIT; 0: off; env CARBSCAN_DURABLE_ENQUEUE).")
    var durableEnqueue: Int?

    @Option(help: "How long a durable enqueue waits for its replicas, in ms (env CARBSCAN_DURABLE_TIMEOUT_MS; default 1000).")
    var durableTimeoutMs: Int?

    @Option(help: "The carbscan binary whose workers and producer a benchmark starts (default: the one beside this binary).")
    var carbscan: String?

    /// Replicas a durable enqueue waits for: the option, else `CARBSCAN_DURABLE_ENQUEUE` (refused when set but wrong).
    func durableReplicas() throws -> Int {
        try durableEnqueue ?? Self.integer("CARBSCAN_DURABLE_ENQUEUE", default: 0, in: 0...16)
    }

    /// The benchmark's queue options: the durable enqueue when asked for, as `carbscan` reads it (the prefix is the caller's).
    func queueOptions() throws -> QueueOptions {
        var options = QueueOptions()
        let replicas = try durableReplicas()
        let timeout = try durableTimeoutMs ?? Self.integer("CARBSCAN_DURABLE_TIMEOUT_MS", default: 1000, in: 1...60_000)
        if replicas > 0 { options.durability = Durability(replicas: replicas, timeout: .milliseconds(timeout)) }
        return options
    }

    func catalog() throws -> JobCatalog {
        do {
            return try JobCatalog.load(directory: jobsDir)
        } catch {
            throw BenchError("invalid job configuration: \(error)")
        }
    }

    func redis(logger: Logger) throws -> RedisClient {
        do {
            return try RedisClient(url: redisURL, logger: logger)
        } catch {
            throw BenchError(error.message)
        }
    }

    /// `--carbscan`, else `carbscan` in this binary's folder (both are built into `.build/release`).
    func carbscanExecutable() -> URL {
        if let carbscan { return URL(fileURLWithPath: carbscan).resolvingSymlinksInPath() }
        return URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("carbscan")
    }

    /// A variable's integer, or `fallback` when unset; refused when set but not a number in `range`.
    private static func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = ProcessInfo.processInfo.environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            return fallback
        }
        guard let value = Int(text), range.contains(value) else {
            throw BenchError("configuration: \(name): '\(text)' is not a number in \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }

    /// Logs on stderr at `LOG_LEVEL` (default info): the benchmarks print their figures on stdout.
    static func bootstrapLogging() {
        let level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// Raises the open-file soft limit to the hard limit: a benchmark holding thousands of sockets needs more than 1,024.
    static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// A benchmark that could not run, with the reason.
struct BenchError: Error, CustomStringConvertible {
    let description: String

    init(_ message: String) { description = message }
}
