import Foundation
import Redis
import TestSupport
import Testing

/// The Redis the ops scripts started (`REDIS_URL`, as `ops/test.sh` exports it).
enum TestRedis {
    static func client(poolSize: Int = 2, readTimeout: Duration = .seconds(5)) throws -> RedisClient {
        var configuration = try RedisConfiguration(url: TestServices.redisURL)
        configuration.poolSize = poolSize
        configuration.readTimeout = readTimeout
        return RedisClient(configuration: configuration)
    }

    /// A key namespace no other test uses.
    static func namespace(_ name: String = #function) -> String {
        "test:\(name.prefix { $0 != "(" }):\(UUID().uuidString.prefix(8))"
    }

    /// Sends `count` ECHOs at once, each in its own task (preferring `executor` when given), and checks that each
    /// gets its own reply; `alsoCheck` runs in each task after its reply.
    static func echoConcurrently(
        _ redis: RedisClient, count: Int, executor: (any TaskExecutor)? = nil, alsoCheck: @escaping @Sendable () -> Void = {}
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<count {
                group.addTask(executorPreference: executor) {
                    let reply = try await redis.send("ECHO", "value-\(i)")
                    #expect(reply == .bulk("value-\(i)"))
                    alsoCheck()
                }
            }
            try await group.waitForAll()
        }
    }
}
