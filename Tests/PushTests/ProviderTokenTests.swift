import Crypto
import Foundation
import JSON
import Push
import Synchronization
import Testing

/// The provider token: ES256 over the header and claims APNs reads, verified with the key's public half; one token
/// per process until it is 40 minutes old (APNs refuses renewals within 20 minutes and tokens over an hour old).
@Suite struct ProviderTokenTests {
    /// A clock the test moves.
    final class TestClock: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000.7))
        func advance(minutes: Double) { now.withLock { $0 = $0.addingTimeInterval(minutes * 60) } }
        var read: @Sendable () -> Date { { self.now.withLock { $0 } } }
    }

    struct Decoded {
        var header: JSONValue
        var claims: JSONValue
    }

    /// Reads header and claims, after checking the signature with the public key.
    static func verify(_ token: String, with key: P256.Signing.PublicKey) throws -> Decoded {
        #expect(try isSigned(token, by: key), "the signature does not verify")
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return Decoded(
            header: try JSONValue(parsing: String(decoding: try #require(base64URL(parts[0])), as: UTF8.self)),
            claims: try JSONValue(parsing: String(decoding: try #require(base64URL(parts[1])), as: UTF8.self)))
    }

    /// Whether the JWS signature (r ‖ s) over `header.claims` verifies with the key.
    static func isSigned(_ token: String, by key: P256.Signing.PublicKey) throws -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(base64URL(parts[2])))
        return key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8))
    }

    static func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    @Test func theTokenIsAnES256JWTOfTheKeyIDAndTeam() throws {
        let key = P256.Signing.PrivateKey()
        let clock = TestClock()
        let token = try ProviderToken(key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: clock.read).current()
        let decoded = try Self.verify(token, with: key.publicKey)
        #expect(decoded.header == ["alg": "ES256", "kid": "KEY1234567"])
        #expect(decoded.claims == ["iss": "TEAM123456", "iat": .int(1_800_000_000)])
        #expect(try !Self.isSigned(token, by: P256.Signing.PrivateKey().publicKey), "another key's public half verifies it")
    }

    @Test func oneTokenUntilItIsFortyMinutesOld() throws {
        let key = P256.Signing.PrivateKey()
        let clock = TestClock()
        let provider = ProviderToken(key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: clock.read)
        let first = try provider.current()
        clock.advance(minutes: 20)
        #expect(try provider.current() == first, "renewed within 20 minutes: APNs answers TooManyProviderTokenUpdates")
        clock.advance(minutes: 19.9)
        #expect(try provider.current() == first)
        clock.advance(minutes: 0.1)
        let second = try provider.current()
        #expect(second != first, "not renewed at 40 minutes: APNs refuses it at 60")
        #expect(try Self.verify(second, with: key.publicKey).claims["iat"] == .int(1_800_000_000 + 40 * 60))
        clock.advance(minutes: 39)
        #expect(try provider.current() == second)
        // A clock set back before the token's iat: a new one, never a token from the future.
        clock.advance(minutes: -60)
        let third = try provider.current()
        #expect(third != second)
        #expect(try Self.verify(third, with: key.publicKey).claims["iat"] == .int(1_800_000_000 + 40 * 60 + 39 * 60 - 60 * 60))
    }
}
