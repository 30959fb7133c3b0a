import CarbScanClient
import Foundation
import JSON
import OpenAPIRuntime
import OpenAPIURLSession
import Synchronization
import TestSupport
import Testing

/// The generated Swift client (`CarbScanClient`) against a live `carbscan serve` and `carbscan work`, as the iOS app
/// would use it: URLSession, the bearer middleware, the API's millisecond dates, and the 202 → job follow-up.
@Suite struct GeneratedClientTests {
    static let estimate: JSONValue = [
        "compositeItemName": "Rice bowl", "carbEstimate": 62, "confidenceLow": 55, "confidenceHigh": 70, "confidenceLevel": 0.8,
        "analysis": "Rice about 60 g, sauce 2 g.",
    ]
    static let answer: JSONValue = [
        "response": "A cup of cooked rice has about 45 g of carbohydrates.", "messageType": "carb_lookup",
        "followUpQuestions": ["And brown rice?"],
    ]

    @Test func anAppDrivesTheLiveAPIThroughTheGeneratedClient() async throws {
        // The model answers the analysis first, then the chat.
        let model = try await OpenAIServer.start(fallback: .json(Self.answer))
        defer { model.stop() }
        model.script([.json(Self.estimate)])
        try await withScratchDatabase { url in
            let port = CarbScanBinary.freePort()
            let prefix = "client-\(UUID().uuidString.prefix(8))"
            let environment = [
                "DATABASE_URL": url, "JWT_SECRET": String(repeating: "s", count: 40), "AI_BASE_URL": model.baseURL,
                "AI_API_KEY": "sk-test", "CARBSCAN_PREFIX": prefix, "SYNC_WAIT_SECONDS": "10",
            ]
            let server = try CarbScanBinary.start(["serve", "--port", String(port), "--migrate"], environment: environment)
            defer { server.signal(SIGKILL) }
            let worker = try CarbScanBinary.start(["work", "--queues", "ai"], environment: environment)
            defer { worker.signal(SIGKILL) }

            let token = Mutex<String?>(nil)
            let client = Client.carbScan(
                serverURL: URL(string: "http://127.0.0.1:\(port)")!, transport: URLSessionTransport(),
                token: { token.withLock { $0 } })
            #expect(
                try await eventually(timeout: .seconds(30)) {
                    (try? await client.getHealth()).map { if case .ok = $0 { true } else { false } } ?? false
                }, "\(server.output)")

            // Register: the envelope's dates (milliseconds) decode.
            let registered = try await client.registerAccount(
                body: .json(.init(email: "app-\(UUID().uuidString.prefix(6))@example.com", password: "correct horse", name: "App User")))
            let session = try registered.created.body.json.value2.data
            token.withLock { $0 = session.accessToken }
            #expect(try registered.created.body.json.value1.meta.timestamp.timeIntervalSinceNow > -60)

            // Offline meals sync.
            let synced = try await client.syncMeals(
                body: .json(.init(localMeals: [.init(localId: "local-1", name: "Toast", carbEstimate: 24, createdAt: Date() - 3600)])))
            #expect(try synced.ok.body.json.value2.data.syncedLocalMeals.count == 1)

            // A photo analysed synchronously (200), its meal in the history.
            let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + Array(repeating: 0x42, count: 200))
            let analysed = try await client.analyzeMealPhoto(body: .json(.init(imageBase64: jpeg.base64EncodedString())))
            let analysis = try analysed.ok.body.json.value2.data
            #expect(analysis.analysis.carbEstimate == 62)
            let meals = try await client.listMeals(query: .init(limit: 10))
            #expect(try meals.ok.body.json.value2.data.meals.count == 2)

            // The meal's photo, as the app shows it and caches it: the bytes, then a revalidation by ETag.
            let meal = try #require(try meals.ok.body.json.value2.data.meals.first { $0.id == analysis.mealId })
            #expect(meal.imageUrl == "/api/mobile/v1/meals/\(analysis.mealId)/image")
            let image = try await client.getMealImage(path: .init(id: Int64(analysis.mealId))).ok
            #expect(try await Data(collecting: image.body.image, upTo: 1 << 20) == jpeg)
            let revalidated = try await client.getMealImage(
                path: .init(id: Int64(analysis.mealId)), headers: .init(ifNoneMatch: image.headers.eTag))
            if case .notModified = revalidated {} else { Issue.record("a current copy was sent again: \(revalidated)") }

            // A chat asked asynchronously: 202, then the helper follows it to its end.
            let accepted = try await client.sendChatMessage(
                headers: .init(prefer: "respond-async"), body: .json(.init(message: "Carbs in rice?")))
            let jobID = try accepted.accepted.body.json.value2.data.jobId
            let job = try await client.waitForJob(jobID)
            #expect(job.status.value1 == .succeeded)
            let history = try await client.getChatHistory()
            #expect(try history.ok.body.json.value2.data.messages.first?.messageType == "carb_lookup")
            let status = try await client.getSubscriptionStatus()
            #expect(try status.ok.body.json.value2.data.chat.usedToday == 1)

            // Refresh: a new pair, the new access token works.
            let refreshed = try await client.refreshToken(body: .json(.init(refreshToken: session.refreshToken)))
            token.withLock { $0 = try? refreshed.ok.body.json.value2.data.accessToken }
            if case .ok = try await client.getCurrentUser() {} else { Issue.record("the refreshed token was refused") }

            // Delete the account: the token stops working.
            if case .ok = try await client.deleteAccount() {} else { Issue.record("the account was not deleted") }
            if case .unauthorized = try await client.getCurrentUser() {} else { Issue.record("a deleted account's token still works") }
        }
    }
}
