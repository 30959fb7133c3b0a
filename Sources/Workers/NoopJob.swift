import Foundation
import JobContracts
import Queue
import Redis

/// The diagnostics kind: does nothing, or exactly what its payload asks, so tests, chaos runs and benchmarks can
/// drive the engine end to end through real worker processes.
package struct NoopJob: JobKind {
    package typealias Contract = NoopContract

    let redis: RedisClient

    package init(redis: RedisClient) {
        self.redis = redis
    }

    package init(services: WorkerServices) {
        self.init(redis: services.redis)
    }

    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
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
