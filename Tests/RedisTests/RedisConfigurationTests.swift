import Redis
import Testing

@Suite struct RedisConfigurationTests {
    @Test func parsesEveryPart() throws {
        let c = try RedisConfiguration(url: "redis://user:s%40cret@example.org:6390/3")
        #expect(c.host == "example.org")
        #expect(c.port == 6390)
        #expect(c.username == "user")
        #expect(c.password == "s@cret")
        #expect(c.database == 3)
    }

    @Test func passwordOnlyAndDefaults() throws {
        let c = try RedisConfiguration(url: "redis://:pw@localhost")
        #expect(c.username == nil)
        #expect(c.password == "pw")
        #expect(c.port == 6379)
        #expect(c.database == 0)
    }

    @Test(arguments: ["http://localhost:6379", "redis://localhost:6379/x", "redis://localhost:99999", "not a url"])
    func refusesMalformed(_ url: String) {
        #expect(throws: RedisError.self) { try RedisConfiguration(url: url) }
    }

    @Test func redactsPasswordsForLogs() {
        let text = RedisConfiguration.redacted("redis://:topsecret@host:1/0")
        #expect(!text.contains("topsecret"))
        #expect(text.contains("host"))
    }
}
