import Foundation
import Redis
import TestSupport
import Testing

/// A master that dies in a cluster of three masters with one replica each (a private cluster: the fault would
/// disturb the shared one).
@Suite struct RedisFailoverTests {
    /// The first address's node, a master, is killed: its replica takes over (node timeout 1 s), and the client, which
    /// reads the map again from the other nodes it knows once the dead one stops answering, is served by the new
    /// master: the keys written before, and new writes.
    @Test func aKilledMasterIsFollowedToItsPromotedReplica() async throws {
        let cluster = try PrivateCluster.start(masters: 3, replicas: 1)
        defer { cluster.stop() }
        let seedPort = cluster.nodes[0].port
        let redis = try cluster.client()
        defer { redis.close() }
        let keys = (0..<300).map { "failover:\($0)" }
        // Durable: each master's replica acknowledged its writes (a `WAIT` after them on each node's connection).
        #expect(
            try await redis.pipeline(keys.map { ["SET", $0, "before"] }, durability: Durability(replicas: 1, timeout: .seconds(5)))
                .allSatisfy { $0 == .status("OK") })
        let victim = try #require(cluster.master(ofSlot: HashSlot.of(keys[0]), askPort: seedPort))
        let onVictim = keys.filter { cluster.master(ofSlot: HashSlot.of($0), askPort: seedPort) == victim }
        // The replicas hold them all as soon as the durable write returned (without it, a write not yet copied could be
        // lost with its master).
        let held = cluster.nodes.map { Int(PrivateCluster.cli($0.port, "DBSIZE").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 }
        #expect(held.reduce(0, +) == 2 * keys.count, "keys per node: \(held)")
        let dead = try #require(cluster.nodes.first { $0.port == victim })
        dead.stop()
        let served = try await eventually(timeout: .seconds(30)) {
            (try? await redis.send("GET", onVictim[0])) == .bulk("before")
        }
        #expect(served, "the dead master's keys were never served again")
        #expect(cluster.waitUntilOK(timeout: 10, excluding: [victim]))
        let replies = try await redis.pipeline(onVictim.map { ["GET", $0] } + keys.map { ["SET", $0, "after"] })
        #expect(replies.prefix(onVictim.count).allSatisfy { $0 == .bulk("before") })
        #expect(replies.dropFirst(onVictim.count).allSatisfy { $0 == .status("OK") })
        #expect(cluster.master(ofSlot: HashSlot.of(onVictim[0]), askPort: cluster.nodes.first { $0.port != victim }!.port) != victim)
    }
}
