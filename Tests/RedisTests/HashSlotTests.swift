import Redis
import TestSupport
import Testing

@Suite struct HashSlotTests {
    /// The slot of each key, computed here, is the one the cluster computes (`CLUSTER KEYSLOT`), hash tags included.
    @Test func slotsAreTheServersSlots() async throws {
        let keys =
            [
                "", "a", "foo", "123456789", "{user1000}.following", "{user1000}.followers", "foo{}{bar}", "foo{{bar}}zap",
                "foo{bar}{zap}", "carbscan:{ai}:stream", "carbscan:{ai#3}:job:0193", "héllo ✓", "{", "}", "{}", "x{y",
            ] + (0..<200).map { "key:\($0 * 7919)" }
        let seed = try RedisConfiguration(url: TestServices.clusterURL)
        let node = TestCluster.node(RedisEndpoint(host: seed.host, port: seed.port))
        defer { node.close() }
        let replies = try await node.pipeline(keys.map { ["CLUSTER", "KEYSLOT", $0] })
        for (key, reply) in zip(keys, replies) { #expect(HashSlot.of(key) == reply.int, "\(key)") }
        #expect(HashSlot.of("123456789") == 0x31C3 & 16383)
        #expect(HashSlot.of("{user1000}.following") == HashSlot.of("{user1000}.followers"))
    }
}
