import Foundation
import Testing

@testable import Redis

/// Commands go to hiredis already encoded (`RESP.encode`): the bytes must be exactly the protocol's, and Redis
/// must read back what was sent, whatever the lengths and bytes.
@Suite struct RESPTests {
    @Test func encodesAnArrayOfBulkStrings() {
        var output: [UInt8] = []
        RESP.encode(["SET", "k", ""], into: &output)
        RESP.encode(["ECHO", "héllo ✓"], into: &output)
        let expected = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n" + "*2\r\n$4\r\nECHO\r\n$10\r\nhéllo ✓\r\n"
        #expect(output == Array(expected.utf8))
    }

    @Test(arguments: [9, 10, 99, 100, 12_345, 1_000_000])
    func encodesEveryLengthInDecimal(length: Int) {
        var output: [UInt8] = []
        RESP.encode(Array(repeating: "x", count: 12) + [String(repeating: "a", count: length)], into: &output)
        let head = "*13\r\n" + String(repeating: "$1\r\nx\r\n", count: 12) + "$\(length)\r\n"
        #expect(output.starts(with: Array(head.utf8)))
        #expect(output.count == head.utf8.count + length + 2)
    }

    /// Values Redis must store byte for byte: empty, lengths around each new digit, protocol characters inside,
    /// multi-byte text; and a pipeline past the 256 commands after which a long batch is written as it goes.
    @Test func redisReadsBackEveryValue() async throws {
        let redis = try TestRedis.client()
        defer { redis.close() }
        let key = TestRedis.namespace()
        let values = [
            "", "1", String(repeating: "b", count: 9), String(repeating: "c", count: 10), "*2\r\n$3\r\nDEL\r\n",
            "line\nbreak\r\n", "Grüße, 日本 🍎", String(repeating: "z", count: 100_000),
        ]
        for value in values {
            try await redis.send("SET", key, value)
            #expect(try await redis.send("GET", key) == .bulk(value))
        }
        let commands = (0..<700).map { ["RPUSH", key + ":list", "item-\($0)"] }
        let replies = try await redis.pipeline(commands)
        #expect(replies == (1...700).map { .integer($0) })
        #expect(try await redis.send("LINDEX", key + ":list", "699") == .bulk("item-699"))
        try await redis.send("DEL", key, key + ":list")
    }
}
