import Foundation
import JSON
import Logging
import Push
import TestSupport
import Testing

/// The APNs client against a local peer that answers as APNs does (HTTP/2 over TLS, provider tokens checked with the
/// key's public half, Apple's statuses and reasons).
@Suite struct APNsClientTests {
    static let token = String(repeating: "ab", count: 32)

    static func client(_ peer: APNsPeer, topic: String? = nil, keyPath: String? = nil, clock: @escaping @Sendable () -> Date = { Date() })
        throws -> APNsClient
    {
        let key = try PushSettings.signingKey(pem: String(contentsOfFile: keyPath ?? peer.keyPath, encoding: .utf8))
        let settings = PushSettings(
            url: peer.url, topic: topic ?? peer.topic, keyID: peer.keyID, teamID: peer.teamID, key: key, caFile: peer.caFile)
        return APNsClient(settings: settings, logger: Logger(label: "test"), clock: clock)
    }

    static let notification = APNsNotification(
        title: "Your meal is analysed", body: "Open CarbScan to see its carbs.", custom: ["jobId": "3f1c", "kind": "analysis"],
        collapseID: "3f1c")

    @Test func aPushIsAcceptedOverHTTP2WithAppleHeadersAndPayload() async throws {
        let peer = try await APNsPeer.start()
        let client = try Self.client(peer)
        defer { client.shutdown() }
        let now = Date()
        let answer = try await client.send(Self.notification, to: Self.token, now: now)
        #expect(answer.verdict == .accepted && answer.status == 200 && answer.reason == nil)
        let push = try #require(try peer.pushes().first)
        #expect(answer.apnsID == push.apnsId)
        #expect(push.http == "2" && push.token == Self.token)
        #expect(push.kid == peer.keyID && push.iss == peer.teamID)
        #expect(push.headers["apns-topic"] == peer.topic && push.headers["apns-push-type"] == "alert")
        #expect(push.headers["apns-priority"] == "10" && push.headers["apns-collapse-id"] == "3f1c")
        #expect(push.headers["apns-expiration"] == String(Int(now.timeIntervalSince1970) + 86_400))
        let payload = try JSONValue(parsing: try #require(push.payload))
        #expect(
            payload == [
                "aps": ["alert": ["title": "Your meal is analysed", "body": "Open CarbScan to see its carbs."], "sound": "default"],
                "jobId": "3f1c", "kind": "analysis",
            ])
    }

    @Test func appleErrorsAreReadWithTheirReasons() async throws {
        let peer = try await APNsPeer.start()
        let client = try Self.client(peer)
        defer { client.shutdown() }
        let gone = String(repeating: "01", count: 32)
        let busy = String(repeating: "02", count: 32)
        let down = String(repeating: "03", count: 32)
        try peer.answer(gone, with: [.unregistered])
        try peer.answer(busy, with: [APNsPeer.Answer(429, "TooManyRequests", retryAfter: 7)])
        try peer.answer(down, with: [.serviceUnavailable])

        let unregistered = try await client.send(Self.notification, to: gone)
        #expect(unregistered.verdict == .unregistered && unregistered.reason == "Unregistered")
        let when = try #require(unregistered.unregisteredAt)
        #expect(abs(when.timeIntervalSinceNow) < 60)
        #expect(unregistered.apnsID != nil)
        let throttled = try await client.send(Self.notification, to: busy)
        #expect(throttled.verdict == .retry && throttled.summary == "429 TooManyRequests" && throttled.retryAfter == .seconds(7))
        #expect(try await client.send(Self.notification, to: down).verdict == .retry)
        // Answered once each: the next push to the same device is accepted.
        #expect(try await client.send(Self.notification, to: busy).verdict == .accepted)

        let badToken = try await client.send(Self.notification, to: "not-a-device-token")
        #expect(badToken.verdict == .unregistered && badToken.summary == "400 BadDeviceToken")
        let tooLarge = APNsNotification(title: "t", body: String(repeating: "x", count: 5000))
        let large = try await client.send(tooLarge, to: Self.token)
        #expect(large.verdict == .refused && large.summary == "413 PayloadTooLarge")
        let otherApp = try Self.client(peer, topic: "com.example.other")
        defer { otherApp.shutdown() }
        let topic = try await otherApp.send(Self.notification, to: Self.token)
        #expect(topic.verdict == .refused && topic.summary == "400 TopicDisallowed")
    }

    @Test func aWrongOrStaleProviderTokenIsAConfigurationError() async throws {
        let peer = try await APNsPeer.start()
        let otherKey = FileManager.default.temporaryDirectory.appendingPathComponent("other-\(UUID().uuidString).p8").path
        defer { try? FileManager.default.removeItem(atPath: otherKey) }
        try await APNsPeer.makeKey(at: otherKey)
        let wrongKey = try Self.client(peer, keyPath: otherKey)
        defer { wrongKey.shutdown() }
        let invalid = try await wrongKey.send(Self.notification, to: Self.token)
        #expect(invalid.verdict == .configuration && invalid.summary == "403 InvalidProviderToken")

        let stale = try Self.client(peer, clock: { Date().addingTimeInterval(-61 * 60) })
        defer { stale.shutdown() }
        let expired = try await stale.send(Self.notification, to: Self.token)
        #expect(expired.verdict == .configuration && expired.summary == "403 ExpiredProviderToken")
        #expect(try peer.pushes().isEmpty)
    }
}
