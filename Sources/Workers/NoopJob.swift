import Foundation
import Queue
import Redis

/// The diagnostics kind: does nothing, or exactly what its payload asks, so tests, chaos runs and benchmarks can
/// drive the engine end to end through real worker processes.
public struct NoopJob: JobKind {
    public static let name = "noop"

    public struct Parameters: Codable, Sendable {
        /// Sleep this long (cancellable), to simulate work.
        public var sleepMs: Int?
        /// RPUSH the job id onto this Redis list after the work: the effect a chaos test counts.
        public var record: String?
        /// INCR this Redis key after the work (a completion counter for benchmarks).
        public var counter: String?
        /// Enqueue time (unix seconds): RPUSH the pickup latency in µs onto `latency` when the job starts.
        public var stamp: Double?
        public var latency: String?
        /// Fail this way: `retry` (a retryable error), `permanent`, `outage` (Redis unreachable, as the client
        /// reports it: what the engine postpones without spending an attempt), or `crash` (trap the whole worker
        /// process: a poison message, for chaos tests).
        public var fail: String?
        /// Returned as the job's result.
        public var result: JSONValue?
    }

    let redis: RedisClient

    public init(redis: RedisClient) {
        self.redis = redis
    }

    public func run(_ parameters: Parameters, context: JobContext) async throws -> JSONValue? {
        if let stamp = parameters.stamp, let latency = parameters.latency {
            let micros = Int((Date().timeIntervalSince1970 - stamp) * 1_000_000)
            try await redis.send(["RPUSH", latency, String(micros)])
        }
        if let sleepMs = parameters.sleepMs, sleepMs > 0 {
            try await Task.sleep(for: .milliseconds(sleepMs))
        }
        switch parameters.fail {
        case "retry": throw JobFailure.retryable("noop asked to fail (attempt \(context.attempt))")
        case "permanent": throw JobFailure.permanent("noop asked to fail permanently")
        case "outage": throw RedisError(.connection, "noop simulated an unreachable Redis")
        case "crash": fatalError("noop asked to crash its worker (job \(context.id))")
        default: break
        }
        if let record = parameters.record {
            try await redis.send(["RPUSH", record, context.id.rawValue])
        }
        if let counter = parameters.counter {
            try await redis.send(["INCR", counter])
        }
        return parameters.result
    }
}
