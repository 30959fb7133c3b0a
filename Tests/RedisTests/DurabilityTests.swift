import Foundation
import Redis
import TestSupport
import Testing

/// Durable writes (`WAIT` after them, on their connection) against a private master with one replica.
@Suite struct DurabilityTests {
    /// A private master with one replica, and a client of each.
    struct Replicated {
        let replica: PrivateRedis
        let master: RedisClient
        let onReplica: RedisClient
        private let masterServer: PrivateRedis

        init() throws {
            (masterServer, replica) = try PrivateRedis.startWithReplica()
            master = RedisClient(configuration: RedisConfiguration(host: "127.0.0.1", port: masterServer.port))
            onReplica = RedisClient(configuration: RedisConfiguration(host: "127.0.0.1", port: replica.port))
        }

        func stop() {
            master.close()
            onReplica.close()
            masterServer.stop()
            replica.stop()
        }
    }

    /// With its replica up, a durable pipeline and a durable script return their own replies (not `WAIT`'s) and the
    /// replica already has the writes; with the replica gone, both throw `notReplicated` after the timeout, the
    /// writes made on the master.
    @Test func durableWritesWaitForTheReplicaOrFail() async throws {
        let pair = try Replicated()
        defer { pair.stop() }
        let (redis, onReplica, replica) = (pair.master, pair.onReplica, pair.replica)
        let durable = Durability(replicas: 1, timeout: .seconds(2))
        #expect(try await redis.pipeline([["SET", "a", "1"], ["INCR", "a"]], durability: durable) == [.status("OK"), .integer(2)])
        // Acknowledged by the replica: there already, with no wait.
        #expect(try await onReplica.send("GET", "a") == .bulk("2"))
        let script = RedisScript(name: "test-durable", source: "return redis.call('INCRBY', KEYS[1], ARGV[1])")
        #expect(try await redis.run(script, keys: ["a"], arguments: ["5"], durability: durable) == .integer(7))
        #expect(try await onReplica.send("GET", "a") == .bulk("7"))

        replica.stop()
        let impatient = Durability(replicas: 1, timeout: .milliseconds(300))
        await #expect { try await redis.pipeline([["SET", "b", "1"]], durability: impatient) } throws: { error in
            (error as? RedisError)?.code == .notReplicated && (error as? RedisError)?.isOutage == true
        }
        await #expect { try await redis.run(script, keys: ["a"], arguments: ["1"], durability: impatient) } throws: { error in
            (error as? RedisError)?.code == .notReplicated
        }
        // Written on the master all the same.
        #expect(try await redis.send("GET", "b") == .bulk("1"))
        #expect(try await redis.send("GET", "a") == .bulk("8"))
    }

    /// Durable writes made at once share their `WAIT`s (one per batch a connection sends, after all of the batch's
    /// writes): 200 concurrent durable writes cost fewer than 200 waits (exactly 200 when each went alone), and every
    /// one of them is on the replica when its call returns.
    @Test func concurrentDurableWritesShareTheirWaits() async throws {
        let pair = try Replicated()
        defer { pair.stop() }
        let (redis, onReplica) = (pair.master, pair.onReplica)
        let durable = Durability(replicas: 1, timeout: .seconds(2))
        _ = try await redis.pipeline([["SET", "warm", "1"]], durability: durable)
        _ = try await redis.send("CONFIG", "RESETSTAT")
        let missing = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 0..<200 {
                group.addTask {
                    _ = try await redis.pipeline([["SET", "k\(n)", "v"]], durability: durable)
                    return try await onReplica.send("GET", "k\(n)") != .bulk("v")
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(missing == 0, "\(missing) durable writes were not on the replica when their call returned")
        let stats = try await redis.send("INFO", "commandstats").string ?? ""
        let waits = stats.split(whereSeparator: \.isNewline).first { $0.hasPrefix("cmdstat_wait:") }
            .flatMap { $0.split(separator: "=").dropFirst().first?.split(separator: ",").first }.flatMap { Int($0) }
        #expect((waits ?? 200) < 200, "\(waits ?? 0) WAITs for 200 durable writes")
        print("200 concurrent durable writes: \(waits ?? 0) WAITs")
    }
}
