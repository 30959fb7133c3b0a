import Foundation
import JSON
import Logging
import Push
import Synchronization
import TestSupport
import Testing

/// The FCM client against a local peer that answers as FCM's HTTP v1 API and Google's token endpoint do: the service
/// account's RS256 assertion verified with its public half, access tokens required and cached, Google's errors.
@Suite struct FCMClientTests {
    static let device = "fcm-device-token:APA91bHun4MxP5egoKMwt2KZFBaFUH"

    static func client(_ peer: FCMPeer, account: String? = nil, clock: @escaping @Sendable () -> Date = { Date() }) throws -> FCMClient {
        let json = try String(contentsOfFile: account ?? peer.serviceAccountFile, encoding: .utf8)
        return FCMClient(
            settings: try FCMSettings(serviceAccount: json, url: peer.url, caFile: peer.caFile), logger: Logger(label: "test"), clock: clock
        )
    }

    static let notification = APNsNotification(
        title: "Your meal is analysed", body: "Open CarbScan to see its carbs.", custom: ["jobId": "3f1c", "kind": "analysis"],
        collapseID: "3f1c")

    @Test func aMessageGoesWithAnAccessTokenFetchedOnce() async throws {
        let peer = try await FCMPeer.start()
        defer { peer.stop() }
        let client = try Self.client(peer)
        defer { client.shutdown() }
        for _ in 0..<2 {
            let answer = try await client.send(try await client.request(Self.notification, to: Self.device))
            #expect(answer.verdict == .accepted && answer.messageID?.hasPrefix("projects/carbscan-test/messages/") == true)
        }
        #expect(
            try peer.requests().map(\.path) == [
                "/token", "/v1/projects/carbscan-test/messages:send", "/v1/projects/carbscan-test/messages:send",
            ])
        let message = try JSONValue(parsing: try #require(try peer.messages().first))
        #expect(
            message == [
                "token": .string(Self.device),
                "notification": ["title": "Your meal is analysed", "body": "Open CarbScan to see its carbs."],
                "data": ["jobId": "3f1c", "kind": "analysis"], "android": ["priority": "HIGH", "ttl": "86400s", "collapse_key": "3f1c"],
            ])
    }

    @Test func googleErrorsAreReadWithTheirCodes() async throws {
        let peer = try await FCMPeer.start()
        defer { peer.stop() }
        let client = try Self.client(peer)
        defer { client.shutdown() }
        try peer.answer("gone", with: [.unregistered])
        try peer.answer("busy", with: [FCMPeer.Answer(429, "QUOTA_EXCEEDED", retryAfter: 9)])
        try peer.answer("bad", with: [FCMPeer.Answer(400, "INVALID_ARGUMENT")])
        let gone = try await client.send(try await client.request(Self.notification, to: "gone"))
        #expect(gone.verdict == .unregistered && gone.summary == "404 UNREGISTERED")
        let busy = try await client.send(try await client.request(Self.notification, to: "busy"))
        #expect(busy.verdict == .retry && busy.summary == "429 QUOTA_EXCEEDED" && busy.retryAfter == .seconds(9))
        let bad = try await client.send(try await client.request(Self.notification, to: "bad"))
        #expect(bad.verdict == .refused && bad.summary == "400 INVALID_ARGUMENT")
    }

    /// A service account whose key Google does not know: the token endpoint's `invalid_grant`, not worth a retry.
    @Test func aWrongServiceAccountKeyIsRefusedForGood() async throws {
        let peer = try await FCMPeer.start()
        defer { peer.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await FCMPeer.makeKey(at: directory.appendingPathComponent("other.pem").path)
        try peer.writeServiceAccount(
            keyPath: directory.appendingPathComponent("other.pem").path, to: directory.appendingPathComponent("account.json").path)
        let client = try Self.client(peer, account: directory.appendingPathComponent("account.json").path)
        defer { client.shutdown() }
        do {
            _ = try await client.request(Self.notification, to: Self.device)
            Issue.record("a refused service account got a token")
        } catch let error as FCMError {
            #expect(!error.isRetryable && "\(error)".contains("400 invalid_grant: Invalid JWT Signature."), "\(error)")
        }
        #expect(try peer.requests().map(\.path) == ["/token"])
    }

    /// The access token is fetched again once it is within five minutes of its `expires_in`, not before.
    @Test func theAccessTokenIsRenewedBeforeItExpires() async throws {
        let peer = try await FCMPeer.start()
        defer { peer.stop() }
        // The clock starts 56 minutes back, so the first token (an hour's assertion) is still valid at the peer.
        let offset = Mutex(-56.0 * 60)
        let client = try Self.client(peer, clock: { Date().addingTimeInterval(offset.withLock { $0 }) })
        defer { client.shutdown() }
        let first = try await client.token.current()
        offset.withLock { $0 += 50 * 60 }
        #expect(try await client.token.current() == first)
        offset.withLock { $0 = 0 }
        let second = try await client.token.current()
        #expect(second != first)
        #expect(try peer.requests().map(\.path) == ["/token", "/token"])
    }

    /// FCM no longer takes the access token (401 UNAUTHENTICATED): a configuration answer for that push, and the
    /// token is dropped, so the next push fetches a new one instead of failing alike until it expires.
    @Test func aRefusedAccessTokenIsFetchedAgain() async throws {
        let peer = try await FCMPeer.start()
        defer { peer.stop() }
        let client = try Self.client(peer)
        defer { client.shutdown() }
        try peer.answer(Self.device, with: [FCMPeer.Answer(401, nil)])
        let refused = try await client.send(try await client.request(Self.notification, to: Self.device))
        #expect(refused.verdict == .configuration && refused.summary == "401 UNAUTHENTICATED")
        #expect(try await client.send(try await client.request(Self.notification, to: Self.device)).verdict == .accepted)
        #expect(try peer.requests().filter { $0.path == "/token" }.count == 2)
    }
}
