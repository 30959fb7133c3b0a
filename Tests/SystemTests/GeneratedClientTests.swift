import CarbScanClient
import Crypto
import Foundation
import JSON
import OpenAPIRuntime
import TestSupport
import Testing

/// The generated Swift client (the `Clients/Swift` package) against a live `carbscan serve` and `carbscan work`, as
/// the iOS app would use it: URLSession, the session middleware and its token store, the API's millisecond dates, and
/// the 202 → job follow-up with the same types as the 200.
@Suite struct GeneratedClientTests {
    static let estimate: JSONValue = [
        "compositeItemName": "Rice bowl", "carbEstimate": 62, "confidenceLow": 55, "confidenceHigh": 70, "confidenceLevel": 0.8,
        "analysis": "Rice about 60 g, sauce 2 g.",
    ]
    static let answer: JSONValue = [
        "response": "A cup of cooked rice has about 45 g of carbohydrates.", "messageType": "carb_lookup",
        "followUpQuestions": ["And brown rice?"],
    ]
    static let jwtSecret = String(repeating: "s", count: 40)

    /// Starts `carbscan serve` (and `carbscan work` on the ai queue when `worker`) on a scratch database, waits until
    /// it answers, and hands `body` its URL.
    static func withLiveAPI(
        environment extra: [String: String] = [:], worker: Bool = false, _ body: (URL) async throws -> Void
    ) async throws {
        try await withScratchDatabase { url in
            let port = CarbScanBinary.freePort()
            let environment = [
                "DATABASE_URL": url, "JWT_SECRET": jwtSecret, "CARBSCAN_PREFIX": "client-\(UUID().uuidString.prefix(8))",
                "SYNC_WAIT_SECONDS": "10",
            ].merging(extra) { $1 }
            let server = try CarbScanBinary.start(["serve", "--port", String(port), "--migrate"], environment: environment)
            defer { server.signal(SIGKILL) }
            let work = try worker ? CarbScanBinary.start(["work", "--queues", "ai"], environment: environment) : nil
            defer { work?.signal(SIGKILL) }
            let serverURL = URL(string: "http://127.0.0.1:\(port)")!
            let probe = Client.carbScan(serverURL: serverURL)
            #expect(
                try await eventually(timeout: .seconds(30)) {
                    (try? await probe.getHealth()).map { if case .ok = $0 { true } else { false } } ?? false
                }, "\(server.output)")
            try await body(serverURL)
        }
    }

    @Test func anAppDrivesTheLiveAPIThroughTheGeneratedClient() async throws {
        // The model answers the two analyses first, then the chat.
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        model.script([.json(Self.estimate), .json(Self.estimate)])
        let environment = ["AI_BASE_URL": model.baseURL, "AI_API_KEY": "sk-test"]
        try await Self.withLiveAPI(environment: environment, worker: true) { serverURL in
            let store = InMemoryTokenStore()
            let session = SessionMiddleware(store: store, serverURL: serverURL)
            let client = Client.carbScan(serverURL: serverURL, session: session)

            // Register: the envelope's dates (milliseconds) decode; the app keeps the session's tokens.
            let registered = try await client.registerAccount(
                body: .json(.init(email: "app-\(UUID().uuidString.prefix(6))@example.com", password: "correct horse", name: "App User")))
            let signedIn = try registered.created.body.json.value2.data
            await store.save(SessionTokens(signedIn))
            #expect(try registered.created.body.json.value1.meta.timestamp.timeIntervalSinceNow > -60)
            #expect(signedIn.user.subscriptionTier.value1 == .free)

            // Offline meals sync.
            let synced = try await client.syncMeals(
                body: .json(.init(localMeals: [.init(localId: "local-1", name: "Toast", carbEstimate: 24, createdAt: Date() - 3600)])))
            #expect(try synced.ok.body.json.value2.data.syncedLocalMeals.count == 1)

            // A photo analysed synchronously (200), then one asynchronously (202 and the job): the same type, the
            // scans left as of each answer.
            let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + Array(repeating: 0x42, count: 200))
            let analysed = try await client.analyzeMealPhoto(body: .json(.init(imageBase64: jpeg.base64EncodedString())))
            let analysis: Components.Schemas.AnalysisResult = try analysed.ok.body.json.value2.data
            #expect(analysis.analysis.carbEstimate == 62)
            #expect(analysis.scanUsage.remainingScans == 2)
            let acceptedPhoto = try await client.analyzeMealPhoto(
                headers: .init(prefer: "respond-async"), body: .json(.init(imageBase64: jpeg.base64EncodedString())))
            let polled: Components.Schemas.AnalysisResult = try await client.waitForAnalysis(
                try acceptedPhoto.accepted.body.json.value2.data.jobId)
            #expect(polled.analysis.carbEstimate == 62)
            #expect(polled.scanUsage.remainingScans == 1)
            #expect(polled.scanUsage.subscriptionTier.value1 == .free)
            #expect(polled.mealId != analysis.mealId)
            let meals = try await client.listMeals(query: .init(limit: 10))
            #expect(try meals.ok.body.json.value2.data.meals.count == 3)

            // The meal's photo, as the app shows it and caches it: the bytes, then a revalidation by ETag.
            let meal = try #require(try meals.ok.body.json.value2.data.meals.first { $0.id == analysis.mealId })
            #expect(meal.imageUrl == "/api/mobile/v1/meals/\(analysis.mealId)/image")
            let image = try await client.getMealImage(path: .init(id: Int64(analysis.mealId))).ok
            #expect(try await Data(collecting: image.body.image, upTo: 1 << 20) == jpeg)
            let revalidated = try await client.getMealImage(
                path: .init(id: Int64(analysis.mealId)), headers: .init(ifNoneMatch: image.headers.eTag))
            if case .notModified = revalidated {} else { Issue.record("a current copy was sent again: \(revalidated)") }

            // A chat asked asynchronously: 202, then the helper follows it to the same type as a 200.
            let accepted = try await client.sendChatMessage(
                headers: .init(prefer: "respond-async"), body: .json(.init(message: "Carbs in rice?")))
            let answer: Components.Schemas.ChatAnswer = try await client.waitForChat(try accepted.accepted.body.json.value2.data.jobId)
            #expect(answer.messageType.value1 == .carbLookup)
            #expect(answer.usage.totalUsedToday == 1)
            let history = try await client.getChatHistory()
            #expect(try history.ok.body.json.value2.data.messages.first?.messageType == "carb_lookup")
            let status = try await client.getSubscriptionStatus()
            #expect(try status.ok.body.json.value2.data.chat.usedToday == 1)

            // Refresh through the session: the stored access token still works.
            try await session.refresh()
            if case .ok = try await client.getCurrentUser() {} else { Issue.record("the refreshed token was refused") }

            // Delete the account: the token stops working, and the error code decodes.
            if case .ok = try await client.deleteAccount() {} else { Issue.record("the account was not deleted") }
            guard case .unauthorized(let refused) = try await client.getCurrentUser() else {
                Issue.record("a deleted account's token still works")
                return
            }
            #expect(try refused.body.json.error.code.value1 == .unauthorized)
        }
    }

    /// The app's flow for an answer it shows as it is written: a chat accepted with 202, then its event stream through
    /// the generated client. The server ends each stream after a second (`EVENT_STREAM_MAX_SECONDS`), as a dropped
    /// connection would, while the model takes six: the client reconnects with `Last-Event-ID` and gets every event
    /// once, in order, through to the answer. (With three, a loaded CI run once connected the stream more than a second
    /// after the job had started, and its events all came within two seconds.)
    @Test func anAppFollowsAChatOnItsEventStreamAcrossReconnections() async throws {
        let model = try await OpenAIServer.start(fallback: .slow(.seconds(6), .json(Self.answer)))
        defer { model.stop() }
        let environment = ["AI_BASE_URL": model.baseURL, "AI_API_KEY": "sk-test", "EVENT_STREAM_MAX_SECONDS": "1"]
        try await Self.withLiveAPI(environment: environment, worker: true) { serverURL in
            let store = InMemoryTokenStore()
            let client = Client.carbScan(serverURL: serverURL, tokenStore: store)
            let registered = try await client.registerAccount(
                body: .json(.init(email: "stream-\(UUID().uuidString.prefix(6))@example.com", password: "correct horse")))
            await store.save(SessionTokens(try registered.created.body.json.value2.data))
            let accepted = try await client.sendChatMessage(
                headers: .init(prefer: "respond-async"), body: .json(.init(message: "Carbs in rice?")))
            let jobID = try accepted.accepted.body.json.value2.data.jobId
            let seen = Events()
            let job = try await client.followJob(jobID) { event in await seen.add(event) }
            let events = await seen.all
            #expect(job.status.value1 == .succeeded)
            guard case .ChatAnswer(let answer) = job.result?.value1 else {
                Issue.record("the last event has no chat answer: \(events.map(\.name))")
                return
            }
            #expect(answer.response == "A cup of cooked rice has about 45 g of carbohydrates.")
            #expect(events.compactMap(\.text).joined() == answer.response, "the deltas are the answer as it was written")
            let states = events.map(\.name).filter { $0 != "delta" }
            #expect(states == ["queued", "running", "succeeded"], "\(events.map(\.name))")
            let ids = events.compactMap(\.id)
            #expect(ids.count == events.count && Set(ids).count == ids.count, "an event came twice or without an id")
            // The model took 6 s and each stream lives 1 s: the events came over at least two reconnections.
            #expect(await seen.span >= .seconds(2))
        }
    }

    actor Events {
        var all: [JobStreamEvent] = []
        var times: [ContinuousClock.Instant] = []
        func add(_ event: JobStreamEvent) {
            all.append(event)
            times.append(.now)
        }
        /// The time from the first event to the last.
        var span: Duration { (times.last ?? .now) - (times.first ?? .now) }
    }

    /// With `REFRESH_TOKEN_ROTATION` each refresh returns a new refresh token and uses up the one sent (no reuse
    /// interval here): the client stores each new one, or its next refresh would be refused and sign the user out.
    /// Three refreshes in a row, one asked for, one on a 401 `TOKEN_EXPIRED`, one ahead of the access token's expiry.
    @Test func theClientStoresTheRotatedRefreshTokens() async throws {
        let environment = ["REFRESH_TOKEN_ROTATION": "true", "REFRESH_TOKEN_REUSE_INTERVAL": "0"]
        try await Self.withLiveAPI(environment: environment) { serverURL in
            let store = InMemoryTokenStore()
            // No refresh ahead of expiry here: a refresh happens only when asked, or on TOKEN_EXPIRED.
            let session = SessionMiddleware(store: store, serverURL: serverURL, refreshAhead: .zero)
            let client = Client.carbScan(serverURL: serverURL, session: session)
            let registered = try await client.registerAccount(
                body: .json(.init(email: "rotation-\(UUID().uuidString.prefix(6))@example.com", password: "correct horse")))
            let first = SessionTokens(try registered.created.body.json.value2.data)
            await store.save(first)
            var seen = [first.refreshToken]

            // 1. Asked for.
            let asked = try await session.refresh()
            #expect(await store.load() == asked)
            seen.append(asked.refreshToken)

            // 2. The stored access token has expired (the same token, `exp` in the past, signed with the server's
            // secret): the server answers TOKEN_EXPIRED, the middleware refreshes and sends the request again.
            let expired = try Self.expired(asked.accessToken)
            await store.save(SessionTokens(accessToken: expired, refreshToken: asked.refreshToken))
            guard case .ok = try await client.getCurrentUser() else {
                Issue.record("the request was not sent again with a refreshed token")
                return
            }
            let onExpiry = try #require(await store.load())
            #expect(onExpiry.accessToken != expired)
            seen.append(onExpiry.refreshToken)

            // 3. Ahead of expiry: a client that refreshes when the token has less than a year left refreshes now.
            let eager = Client.carbScan(serverURL: serverURL, tokenStore: store, refreshAhead: .seconds(365 * 86_400))
            guard case .ok = try await eager.getCurrentUser() else {
                Issue.record("the request ahead of expiry was refused")
                return
            }
            let ahead = try #require(await store.load())
            seen.append(ahead.refreshToken)

            #expect(Set(seen).count == 4, "a refresh token was not rotated or not stored: \(seen)")
            // Rotation was on for real: the first token is used up.
            let reused = try await Client.carbScan(serverURL: serverURL).refreshToken(body: .json(.init(refreshToken: first.refreshToken)))
            guard case .unauthorized(let refused) = reused else {
                Issue.record("a rotated refresh token still works: the server did not rotate")
                return
            }
            #expect(try refused.body.json.error.code.value1 == .invalidRefreshToken)
        }
    }

    /// The access token with its `exp` a minute ago, signed again with the server's `JWT_SECRET` (HS256), so the
    /// server finds it well-formed and expired.
    static func expired(_ token: String) throws -> String {
        let parts = token.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        func decode(_ part: String) -> Data? {
            var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            return Data(base64Encoded: base64)
        }
        func encode(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        var claims = try #require(try decode(parts[1]).flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] })
        let now = Int(Date().timeIntervalSince1970)
        claims["iat"] = now - 120
        claims["exp"] = now - 60
        let signed = parts[0] + "." + encode(try JSONSerialization.data(withJSONObject: claims))
        let signature = HMAC<SHA256>.authenticationCode(for: Data(signed.utf8), using: SymmetricKey(data: Data(jwtSecret.utf8)))
        return signed + "." + encode(Data(signature))
    }
}
