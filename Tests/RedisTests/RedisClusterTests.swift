import Foundation
import Redis
import TestSupport
import Testing

/// The client against a real three-master Redis Cluster on loopback (`ops/cluster.sh`), given one node's address.
@Suite struct RedisClusterTests {
    @Test func findsOutWhetherItTalksToACluster() async throws {
        let cluster = try TestCluster.client()
        defer { cluster.close() }
        #expect(try await cluster.isCluster)
        let standalone = try TestRedis.client()
        defer { standalone.close() }
        #expect(try await !standalone.isCluster)
    }

    /// Keys of every node are written and read through one node's address, one by one and in one pipeline whose
    /// replies come back in the commands' order. Without routing, two thirds of them would be answered `MOVED`.
    @Test func sendsEachKeyToItsNodeAndKeepsThePipelinesOrder() async throws {
        let redis = try TestCluster.client()
        defer { redis.close() }
        let base = TestRedis.namespace()
        let keys = (0..<300).map { "\(base):\($0)" }
        for key in keys.prefix(30) { try await redis.send("SET", key, "one:\(key)") }
        for key in keys.prefix(30) { #expect(try await redis.send("GET", key) == .bulk("one:\(key)")) }
        let written = try await redis.pipeline(keys.flatMap { [["SET", $0, "two:\($0)"], ["GET", $0]] })
        #expect(written.count == 600)
        for (index, key) in keys.enumerated() {
            #expect(written[2 * index] == .status("OK"))
            #expect(written[2 * index + 1] == .bulk("two:\(key)"))
        }
        // The keys really are spread: every master holds some.
        for master in try await TestCluster.masters() {
            let node = TestCluster.node(master.node)
            defer { node.close() }
            let held = try await node.pipeline(keys.map { ["EXISTS", $0] }).filter { $0 == .integer(1) }.count
            #expect(held > 30, "\(master.node) holds \(held) of 300")
        }
        #expect(try await redis.pipeline(keys.map { ["UNLINK", $0] }).allSatisfy { $0 == .integer(1) })
    }

    @Test func aCommandOverSeveralSlotsOrOneNodesKeysIsRefused() async throws {
        let redis = try TestCluster.client()
        defer { redis.close() }
        let masters = try await TestCluster.masters()
        let (a, b) = (TestCluster.key(on: 0, masters), TestCluster.key(on: 1, masters))
        for command in [["DEL", a, b], ["SCAN", "0"], ["DBSIZE"], ["KEYS", "*"], ["FLUSHALL"]] {
            await #expect { try await redis.send(command) } throws: { error in
                (error as? RedisError)?.code == .unroutable
            }
        }
        // One hash tag is one slot: allowed.
        let tag = "{\(TestRedis.namespace())}"
        #expect(try await redis.send("MSET", tag + ":x", "1", tag + ":y", "2") == .status("OK"))
        #expect(try await redis.send("DEL", tag + ":x", tag + ":y") == .integer(2))
    }

    /// A script runs on its key's node; a node that never saw it (or flushed it) is given its source.
    @Test func scriptsRunOnEveryNodeAndSurviveAFlush() async throws {
        let redis = try TestCluster.client()
        defer { redis.close() }
        let masters = try await TestCluster.masters()
        let script = RedisScript(
            name: "test-cluster-incr", source: "return redis.call('INCRBY', KEYS[1], ARGV[1]) + 0 * \(Int.random(in: 1...1_000_000))")
        let keys = masters.indices.map { TestCluster.key(on: $0, masters) }
        for key in keys { #expect(try await redis.run(script, keys: [key], arguments: ["2"]) == .integer(2)) }
        _ = try await redis.onEveryMaster(["SCRIPT", "FLUSH"])
        for key in keys { #expect(try await redis.run(script, keys: [key], arguments: ["3"]) == .integer(5)) }
        _ = try await redis.pipeline(keys.map { ["DEL", $0] })
    }

    /// `SCAN` pages come from every master, and `unlinkKeys` deletes on every master.
    @Test func scansAndUnlinksOnEveryMaster() async throws {
        let redis = try TestCluster.client()
        defer { redis.close() }
        let base = TestRedis.namespace()
        let keys = Set((0..<500).map { "\(base):\($0)" })
        _ = try await redis.pipeline(keys.map { ["SET", $0, "x"] })
        var seen = Set<String>()
        try await redis.forEachKeyBatch(matching: base + ":*") { seen.formUnion($0) }
        #expect(seen == keys)
        #expect(try await redis.unlinkKeys(matching: base + ":*") == 500)
        #expect(try await redis.pipeline(keys.map { ["EXISTS", $0] }).allSatisfy { $0 == .integer(0) })
    }

    /// A `MULTI`/`EXEC` block goes whole to its keys' node, beside commands for other nodes in the same pipeline.
    @Test func aTransactionGoesToItsKeysNode() async throws {
        let redis = try TestCluster.client()
        defer { redis.close() }
        let masters = try await TestCluster.masters()
        let tag = "{\(TestCluster.key(on: 1, masters))}"
        let other = TestCluster.key(on: 2, masters)
        let replies = try await redis.pipeline([
            ["SET", other, "o"], ["MULTI"], ["SET", tag + ":a", "1"], ["INCR", tag + ":a"], ["EXEC"], ["GET", other],
        ])
        #expect(
            replies == [
                .status("OK"), .status("OK"), .status("QUEUED"), .status("QUEUED"), .array([.status("OK"), .integer(2)]), .bulk("o"),
            ])
        try await redis.send("DEL", tag + ":a")
        try await redis.send("DEL", other)
    }

    /// A slot moved to another master behind the client's back: its commands are answered `MOVED`, sent again to the
    /// new master, and the map learns it.
    @Test func followsASlotThatMoved() async throws {
        let redis = try TestCluster.client()
        defer { redis.close() }
        let masters = try await TestCluster.masters()
        let key = TestCluster.key(on: 0, masters)
        try await redis.send("SET", key, "before")
        try await ClusterSlots.move(HashSlot.of(key), from: masters[0], to: masters[1], masters: masters)
        do {
            #expect(try await redis.send("GET", key) == .bulk("before"))
            #expect(try await redis.pipeline([["SET", key, "after"], ["GET", key]]) == [.status("OK"), .bulk("after")])
            let stream = "{\(key)}:stream"
            let blocking = redis.blockingConnection()
            defer { blocking.close() }
            try await redis.send("XADD", stream, "*", "f", "v")
            let read = try await blocking.send(["XREAD", "BLOCK", "1000", "STREAMS", stream, "0"], blockFor: .seconds(1))
            #expect(read.array?.count == 1)
            try await redis.send("DEL", stream)
        } catch {
            try await ClusterSlots.move(HashSlot.of(key), from: masters[1], to: masters[0], masters: masters)
            throw error
        }
        try await ClusterSlots.move(HashSlot.of(key), from: masters[1], to: masters[0], masters: masters)
        #expect(try await redis.send("GET", key) == .bulk("after"))
        try await redis.send("DEL", key)
    }

    /// While a slot migrates, a key already gone to the importing master is answered `ASK`: the client asks there once
    /// (after `ASKING`), and keys not yet moved are still read where they were.
    @Test func followsAnAskDuringAMigration() async throws {
        let redis = try TestCluster.client()
        defer { redis.close() }
        let masters = try await TestCluster.masters()
        let tag = "{\(TestCluster.key(on: 2, masters))}"
        let slot = HashSlot.of(tag)
        try await redis.send("SET", tag + ":moved", "m")
        try await redis.send("SET", tag + ":stayed", "s")
        let (source, target) = (TestCluster.node(masters[2].node), TestCluster.node(masters[0].node))
        defer {
            source.close()
            target.close()
        }
        try await target.send("CLUSTER", "SETSLOT", String(slot), "IMPORTING", masters[2].id)
        try await source.send("CLUSTER", "SETSLOT", String(slot), "MIGRATING", masters[0].id)
        try await source.send(
            "MIGRATE", masters[0].node.host, String(masters[0].node.port), "", "0", "5000", "KEYS", tag + ":moved")
        let replies = try await redis.pipeline([["GET", tag + ":moved"], ["GET", tag + ":stayed"]])
        let blocking = redis.blockingConnection()
        defer { blocking.close() }
        let viaBlocking = try await blocking.send(["GET", tag + ":moved"], blockFor: .zero)
        // Finish the migration, then bring the slot home.
        try await ClusterSlots.finish(slot, from: masters[2], to: masters[0], masters: masters)
        try await ClusterSlots.move(slot, from: masters[0], to: masters[2], masters: masters)
        #expect(replies == [.bulk("m"), .bulk("s")])
        #expect(viaBlocking == .bulk("m"))
        try await redis.send("DEL", tag + ":moved", tag + ":stayed")
    }

    /// A blocking command waits on its key's node, and `unblock` reaches that node (a client id means nothing on
    /// another: sent elsewhere, it would wake nothing, or another connection).
    @Test func blockingCommandsWaitOnTheirKeysNodeAndAreUnblockedThere() async throws {
        let redis = try TestCluster.client()
        defer { redis.close() }
        let masters = try await TestCluster.masters()
        for index in masters.indices {
            let key = TestCluster.key(on: index, masters)
            let blocking = redis.blockingConnection()
            defer { blocking.close() }
            let popped = Task { try await blocking.send(["BLPOP", key, "30"], blockFor: .seconds(30)) }
            let node = TestCluster.node(masters[index].node)
            defer { node.close() }
            let blocked = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < blocked {
                let id = blocking.clientID
                if id != 0, try await node.send("CLIENT", "LIST", "ID", String(id)).string?.contains("cmd=blpop") == true { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            let started = ContinuousClock.now
            await blocking.unblock()
            #expect(try await popped.value == .null)
            // Well before the BLPOP's own 30 s: a loaded machine took 10.4 s once (2026-11-27).
            #expect(ContinuousClock.now - started < .seconds(25))
            try await redis.send("RPUSH", key, "x")
            #expect(try await blocking.send(["BLPOP", key, "5"], blockFor: .seconds(5)) == .array([.bulk(key), .bulk("x")]))
        }
    }

    /// The address list is tried in turn: a first address that does not answer does not stop the client.
    @Test func aListOfAddressesOutlivesADeadFirstOne() async throws {
        let seed = try RedisConfiguration(url: TestServices.clusterURL)
        var configuration = try RedisConfiguration(url: "redis://127.0.0.1:1,\(seed.host):\(seed.port)")
        configuration.connectTimeout = .milliseconds(200)
        let redis = RedisClient(configuration: configuration)
        defer { redis.close() }
        let key = TestRedis.namespace()
        #expect(try await redis.send("SET", key, "v") == .status("OK"))
        #expect(try await redis.send("GET", key) == .bulk("v"))
        try await redis.send("DEL", key)
    }
}

/// Moves a slot between masters the way `redis-cli --cluster reshard` does: IMPORTING, MIGRATING, `MIGRATE` its
/// keys, then `SETSLOT … NODE` on every master.
enum ClusterSlots {
    typealias Master = (node: RedisEndpoint, id: String, slots: [ClosedRange<Int>])

    static func move(_ slot: Int, from source: Master, to target: Master, masters: [Master]) async throws {
        let (from, to) = (TestCluster.node(source.node), TestCluster.node(target.node))
        defer {
            from.close()
            to.close()
        }
        try await to.send("CLUSTER", "SETSLOT", String(slot), "IMPORTING", source.id)
        try await from.send("CLUSTER", "SETSLOT", String(slot), "MIGRATING", target.id)
        try await finish(slot, from: source, to: target, masters: masters)
    }

    static func finish(_ slot: Int, from source: Master, to target: Master, masters: [Master]) async throws {
        let from = TestCluster.node(source.node)
        defer { from.close() }
        while true {
            let keys = (try await from.send("CLUSTER", "GETKEYSINSLOT", String(slot), "1000").array ?? []).compactMap(\.string)
            if keys.isEmpty { break }
            try await from.send(
                ["MIGRATE", target.node.host, String(target.node.port), "", "0", "5000", "REPLACE", "KEYS"] + keys)
        }
        // The target first, so the slot is never without an owner.
        for master in [target] + masters.filter({ $0.id != target.id }) {
            let node = TestCluster.node(master.node)
            defer { node.close() }
            try await node.send("CLUSTER", "SETSLOT", String(slot), "NODE", target.id)
        }
    }
}
