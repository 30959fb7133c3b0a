import Foundation
import Redis

/// The Redis the ops scripts started (`REDIS_URL`, as `ops/test.sh` exports it).
enum TestRedis {
    static let url = ProcessInfo.processInfo.environment["REDIS_URL"] ?? "redis://127.0.0.1:56379/0"

    static func client(poolSize: Int = 2, readTimeout: Duration = .seconds(5)) throws -> RedisClient {
        var configuration = try RedisConfiguration(url: url)
        configuration.poolSize = poolSize
        configuration.readTimeout = readTimeout
        return RedisClient(configuration: configuration)
    }

    /// A key namespace no other test uses.
    static func namespace(_ name: String = #function) -> String {
        "test:\(name.prefix { $0 != "(" }):\(UUID().uuidString.prefix(8))"
    }
}
