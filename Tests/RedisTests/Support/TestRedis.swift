import Foundation
import Redis
import TestSupport
import Testing

/// The Redis the ops scripts started (`REDIS_URL`, as `ops/test.sh` exports it).
enum TestRedis {
    static func client(poolSize: Int = 2, readTimeout: Duration = .seconds(5), url: String = TestServices.redisURL) throws
        -> RedisClient
    {
        var configuration = try RedisConfiguration(url: url)
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

/// The cluster `ops/cluster.sh` started (`CARBSCAN_CLUSTER_URL`).
enum TestCluster {
    static func client(poolSize: Int = 2, readTimeout: Duration = .seconds(5)) throws -> RedisClient {
        try TestRedis.client(poolSize: poolSize, readTimeout: readTimeout, url: TestServices.clusterURL)
    }

    /// A client of one node only (no routing), to look at or steer that node.
    static func node(_ endpoint: RedisEndpoint) -> RedisClient {
        var configuration = RedisConfiguration(host: endpoint.host, port: endpoint.port, poolSize: 1)
        configuration.followsCluster = false
        return RedisClient(configuration: configuration)
    }

    /// Every master with the slot ranges it serves, from `CLUSTER SLOTS`.
    static func masters() async throws -> [(node: RedisEndpoint, id: String, slots: [ClosedRange<Int>])] {
        let seed = try RedisConfiguration(url: TestServices.clusterURL)
        let redis = node(RedisEndpoint(host: seed.host, port: seed.port))
        defer { redis.close() }
        var masters: [(node: RedisEndpoint, id: String, slots: [ClosedRange<Int>])] = []
        for range in try await redis.send("CLUSTER", "SLOTS").array ?? [] {
            guard let fields = range.array, let start = fields[0].int, let end = fields[1].int, let master = fields[2].array,
                let port = master[1].int, let id = master[2].string
            else { continue }
            let endpoint = RedisEndpoint(host: "127.0.0.1", port: port)
            if let index = masters.firstIndex(where: { $0.node == endpoint }) {
                masters[index].slots.append(start...end)
            } else {
                masters.append((endpoint, id, [start...end]))
            }
        }
        // The tests spread keys over three masters; a smaller cluster (a benchmark's, left running) fails them clearly.
        guard masters.count >= 3 else {
            throw ServerError("the test cluster has \(masters.count) master(s), the tests need 3: ops/cluster.sh start")
        }
        return masters
    }

    /// A key of this test's namespace whose slot the master at `index` (in `masters()` order) serves.
    static func key(on index: Int, _ masters: [(node: RedisEndpoint, id: String, slots: [ClosedRange<Int>])], _ name: String = #function)
        -> String
    {
        let base = TestRedis.namespace(name)
        for attempt in 0... {
            let key = "\(base):\(attempt)"
            if masters[index].slots.contains(where: { $0.contains(HashSlot.of(key)) }) { return key }
        }
        fatalError("unreachable")
    }
}
