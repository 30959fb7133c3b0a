import CarbScanClient
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

/// An app already shipped meets values a later server adds: its client must still decode the answer. These answers
/// stand for that later server (this one sends only what its document lists; the system test drives it), so they are
/// canned here.
@Suite struct OpenEnumTests {
    /// Answers every request with `status` and `json`.
    struct CannedTransport: ClientTransport {
        var status: HTTPResponse.Status
        var json: String

        func send(
            _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
        ) async throws -> (HTTPResponse, HTTPBody?) {
            (HTTPResponse(status: status, headerFields: [.contentType: "application/json"]), HTTPBody(json))
        }
    }

    static let jobID = "3f2c9a4e-8b1d-4c7e-9f60-2a5d7e1b4c88"

    static func client(_ status: HTTPResponse.Status, _ json: String) -> Client {
        Client.carbScan(serverURL: URL(string: "https://api.example.com")!, transport: CannedTransport(status: status, json: json))
    }

    static func success(_ data: String) -> String {
        #"{"success": true, "data": \#(data), "meta": {"timestamp": "2025-11-19T12:00:00.000Z", "version": "v1"}}"#
    }

    static func failure(code: String) -> String {
        #"""
        {"success": false, "error": {"code": "\#(code)", "message": "m"},
         "meta": {"timestamp": "2025-11-19T12:00:00.000Z", "version": "v1"}}
        """#
    }

    static func job(status: String, result: String) -> String {
        success(
            #"""
            {"id": "\#(jobID)", "type": "k", "status": "\#(status)", "attempts": 1, "result": \#(result),
             "enqueuedAt": "2025-11-19T12:00:00.000Z"}
            """#)
    }

    @Test func anErrorCodeALaterServerAddsStillDecodes() async throws {
        let unknown = try await Self.client(.unauthorized, Self.failure(code: "PASSKEY_REQUIRED")).getCurrentUser()
        let code = try unknown.unauthorized.body.json.error.code
        #expect(code.value1 == nil)
        #expect(code.rawValue == "PASSKEY_REQUIRED")

        let known = try await Self.client(.unauthorized, Self.failure(code: "TOKEN_EXPIRED")).getCurrentUser()
        #expect(try known.unauthorized.body.json.error.code.value1 == .tokenExpired)
    }

    @Test func aTierALaterServerAddsStillDecodes() async throws {
        let user = #"""
            {"id": "u1", "email": null, "firstName": null, "lastName": null, "subscriptionTier": "family",
             "profileImageUrl": null, "emailRemindersEnabled": false, "timeZone": "UTC"}
            """#
        let output = try await Self.client(.ok, Self.success(user)).getCurrentUser()
        let tier = try output.ok.body.json.value2.data.subscriptionTier
        #expect(tier.value1 == nil && tier.rawValue == "family")
    }

    /// A job of a status this client does not know, with a result of no known shape.
    @Test func aJobALaterServerAddsStillDecodes() async throws {
        let output = try await Self.client(.ok, Self.job(status: "paused", result: #"[1, "two"]"#)).getJob(path: .init(id: Self.jobID))
        let decoded = try output.ok.body.json.value2.data
        #expect(decoded.status.value1 == nil && decoded.status.rawValue == "paused")
        #expect(decoded.result?.value1 == nil)
        #expect(decoded.result?.value2 != nil)
    }

    /// The typed results: an analysis job's is the `AnalysisResult` of `POST analyze`, a chat's the `ChatAnswer` of
    /// `POST chat`, whatever message type a later model gives.
    @Test func aJobsResultIsTypedByItsShape() async throws {
        let analysis = #"""
            {"analysis": {"carbEstimate": 45, "confidenceLow": 40, "confidenceHigh": 50, "confidenceLevel": 0.8,
                          "analysis": "a", "compositeItemName": "Rice"},
             "mealId": 7,
             "scanUsage": {"remainingScans": 2, "scanResetDate": "2025-11-20T00:00:00.000Z", "subscriptionTier": "free"}}
            """#
        let chat = #"""
            {"response": "r", "messageType": "recipe_idea", "followUpQuestions": [],
             "usage": {"remainingChats": null, "totalUsedToday": 3, "subscriptionTier": "pro"}}
            """#
        let analysed = try await Self.client(.ok, Self.job(status: "succeeded", result: analysis)).waitForAnalysis(Self.jobID)
        #expect(analysed.mealId == 7 && analysed.scanUsage.remainingScans == 2)
        let answered = try await Self.client(.ok, Self.job(status: "succeeded", result: chat)).waitForChat(Self.jobID)
        #expect(answered.messageType.rawValue == "recipe_idea" && answered.usage.remainingChats == nil)
        await #expect(throws: UnexpectedResultError.self) {
            try await Self.client(.ok, Self.job(status: "succeeded", result: chat)).waitForAnalysis(Self.jobID)
        }
    }
}
