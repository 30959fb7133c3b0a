import Foundation
import JSON
import JobContracts
import Testing

@testable import Queue

/// The bytes of the kinds' payloads and results, as the hand-written contracts wrote them before the contracts were
/// generated from `jobs/` (``JobContractTests`` goes through every kind; these pin the wire format of the ones clients
/// and stored jobs already depend on: ids carried as strings, `null`s written rather than left out, `oneOf` results).
@Suite struct ContractWireTests {
    @Test func loginWebhook() throws {
        let full = LoginWebhookContract.Parameters(
            event: .signin, eventId: "0b7c6a8e-3f2d-4c1b-9a5e-7d6f8e9a0b1c", provider: "apple", providerUID: "001234.abcd",
            email: "ann@example.com", displayName: "Ann", clientTimestamp: "2026-03-08T07:00:00.123Z")
        var minimal = full
        (minimal.event, minimal.email, minimal.displayName) = (.signout, nil, nil)
        try expectPayload(
            full,
            #"{"client_timestamp":"2026-03-08T07:00:00.123Z","display_name":"Ann","email":"ann@example.com","event":"signin","#
                + #""eventId":"0b7c6a8e-3f2d-4c1b-9a5e-7d6f8e9a0b1c","provider":"apple","provider_uid":"001234.abcd"}"#)
        // Seed 002's body has both members, null when unknown.
        try expectPayload(
            minimal,
            #"{"client_timestamp":"2026-03-08T07:00:00.123Z","display_name":null,"email":null,"event":"signout","#
                + #""eventId":"0b7c6a8e-3f2d-4c1b-9a5e-7d6f8e9a0b1c","provider":"apple","provider_uid":"001234.abcd"}"#)

        try expectResult(LoginWebhookContract.self, .init(delivered: true, status: 201), #"{"delivered":true,"status":201}"#)
        try expectResult(LoginWebhookContract.self, .init(delivered: true, duplicate: true), #"{"delivered":true,"duplicate":true}"#)
        try expectResult(
            LoginWebhookContract.self, .init(delivered: false, skipped: "no sign-out path"),
            #"{"delivered":false,"skipped":"no sign-out path"}"#)
    }

    @Test func analysis() throws {
        let metadata = [
            "deviceModel": "iPhone15,2", "osVersion": "17.4", "appVersion": "2.1.0", "captureTimestamp": "2026-03-08T07:00:00Z",
            "lighting": "daylight", "cameraFacing": "back",
        ]
        let full = AnalysisContract.Parameters(userId: "user-1", photoId: 123_456_789_012_345_678, metadata: metadata)
        // The schema's photoId is a decimal string; the contract converts it, both ways.
        try expectPayload(
            full,
            #"{"metadata":{"appVersion":"2.1.0","cameraFacing":"back","captureTimestamp":"2026-03-08T07:00:00Z","#
                + #""deviceModel":"iPhone15,2","lighting":"daylight","osVersion":"17.4"},"photoId":"123456789012345678","userId":"user-1"}"#
        )
        try expectPayload(AnalysisContract.Parameters(userId: "user-1", photoId: 7), #"{"photoId":"7","userId":"user-1"}"#)
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(AnalysisContract.Parameters.self, from: ["userId": "user-1", "photoId": "x7"])
        }

        let result = AnalysisContract.Result(
            mealId: 7,
            analysis: .init(
                carbEstimate: 45, confidenceLow: 40, confidenceHigh: 50.5, confidenceLevel: 0.8, analysis: "Toast, two slices.",
                compositeItemName: "Toast"))
        try expectResult(
            AnalysisContract.self, result,
            #"{"analysis":{"analysis":"Toast, two slices.","carbEstimate":45.0,"compositeItemName":"Toast","confidenceHigh":50.5,"#
                + #""confidenceLevel":0.8,"confidenceLow":40.0},"mealId":7}"#)
    }

    @Test func chat() throws {
        let parameters = ChatContract.Parameters(
            userId: "user-1", messageId: "6f1c1d2e-8a4b-4c3d-9e5f-0a1b2c3d4e5f", message: "How many carbs are in a banana?")
        try expectPayload(
            parameters,
            #"{"message":"How many carbs are in a banana?","messageId":"6f1c1d2e-8a4b-4c3d-9e5f-0a1b2c3d4e5f","userId":"user-1"}"#)

        var result = ChatContract.Result(
            messageId: 12, response: "About 27 g.", messageType: "carb_lookup", followUpQuestions: ["And an apple?"],
            usage: .init(remainingChats: nil, totalUsedToday: 3, subscriptionTier: "pro"))
        try expectResult(
            ChatContract.self, result,
            #"{"followUpQuestions":["And an apple?"],"messageId":12,"messageType":"carb_lookup","response":"About 27 g.","#
                + #""usage":{"remainingChats":null,"subscriptionTier":"pro","totalUsedToday":3}}"#)
        result.usage = nil
        try expectResult(
            ChatContract.self, result,
            #"{"followUpQuestions":["And an apple?"],"messageId":12,"messageType":"carb_lookup","response":"About 27 g."}"#)
    }

    @Test func email() throws {
        let parameters = EmailContract.Parameters(to: "ann@example.com", subject: "Your sign-in link", text: "Tap the link.")
        try expectPayload(parameters, #"{"subject":"Your sign-in link","text":"Tap the link.","to":"ann@example.com"}"#)
        try expectResult(EmailContract.self, .init(sent: true), #"{"sent":true}"#)
    }

    @Test func noop() throws {
        let full = NoopContract.Parameters(
            sleepMs: 10, record: "list", counter: "done", stamp: 1_767_225_600.5, latency: "latencies", fail: "retry",
            result: ["any": [1, "json", nil]])
        try expectPayload(
            full,
            #"{"counter":"done","fail":"retry","latency":"latencies","record":"list","result":{"any":[1,"json",null]},"#
                + #""sleepMs":10,"stamp":1767225600.5}"#)
        // `fail` stays a string: the handler also knows values the file's schema refuses (tests' own catalogs send them).
        #expect(try JSONValueDecoder().decode(NoopContract.Parameters.self, from: ["fail": "crash"]).fail == "crash")
        try expectResult(NoopContract.self, ["any": [1, "json", nil]], #"{"any":[1,"json",null]}"#)
    }

    @Test func photoRetention() throws {
        try expectPayload(PhotoRetentionContract.Parameters(), "{}")
        try expectResult(
            PhotoRetentionContract.self,
            .init(photosDeleted: 1200, batches: 2, cutoff: "2026-02-06T07:00:00Z"),
            #"{"batches":2,"cutoff":"2026-02-06T07:00:00Z","photosDeleted":1200}"#)
    }

    @Test func pushRegistration() throws {
        let full = PushRegistrationContract.Parameters(
            action: .register, userId: "user-1", platform: .ios, token: String(repeating: "ab", count: 32), deviceModel: "iPhone15,2",
            osVersion: "17.4", appVersion: "2.1.0")
        try expectPayload(
            full,
            #"{"action":"register","appVersion":"2.1.0","deviceModel":"iPhone15,2","osVersion":"17.4","platform":"ios","#
                + #""token":"\#(String(repeating: "ab", count: 32))","userId":"user-1"}"#)
        try expectPayload(
            PushRegistrationContract.Parameters(action: .unregister, token: "ab12"), #"{"action":"unregister","token":"ab12"}"#)
        try expectResult(
            PushRegistrationContract.self, .init(deviceId: "5b0c7f7e-0d7e-4d6b-8d5e-3a2f1c0b9a88"),
            #"{"deviceId":"5b0c7f7e-0d7e-4d6b-8d5e-3a2f1c0b9a88"}"#)
        try expectResult(
            PushRegistrationContract.self, .init(unregistered: true, removed: false), #"{"removed":false,"unregistered":true}"#)
    }

    @Test func scanReset() throws {
        try expectPayload(ScanResetContract.Parameters(scope: .daily, period: "2026-11-22"), #"{"period":"2026-11-22","scope":"daily"}"#)
        try expectPayload(ScanResetContract.Parameters(scope: .monthly), #"{"scope":"monthly"}"#)
        try expectResult(
            ScanResetContract.self,
            .init(period: "2026-11", scope: .monthly, usersReset: 5, batches: 1, longestBatchMs: 3, elapsedMs: 12.5),
            #"{"batches":1,"elapsedMs":12.5,"longestBatchMs":3.0,"period":"2026-11","scope":"monthly","usersReset":5}"#)
    }

    @Test func subscriptionSync() throws {
        let full = SubscriptionSyncContract.Parameters(
            userId: "user-1", subscriptionId: "sub_123", source: .appstore, eventCreated: 1_767_225_600,
            signedTransaction: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln", notificationType: "DID_RENEW")
        try expectPayload(
            full,
            #"{"eventCreated":1767225600,"notificationType":"DID_RENEW","signedTransaction":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln","#
                + #""source":"appstore","subscriptionId":"sub_123","userId":"user-1"}"#)
        try expectPayload(SubscriptionSyncContract.Parameters(source: .reconciliation), #"{"source":"reconciliation"}"#)

        let free = SubscriptionSyncContract.State(userId: "user-1", tier: "free", status: "canceled", renewalDate: nil, applied: true)
        try expectResult(
            SubscriptionSyncContract.self, .state(free),
            #"{"applied":true,"renewalDate":null,"status":"canceled","tier":"free","userId":"user-1"}"#)
        var pro = free
        (pro.tier, pro.status, pro.renewalDate, pro.applied) = ("pro", "active", "2026-04-01T00:00:00.000Z", false)
        try expectResult(
            SubscriptionSyncContract.self, .state(pro),
            #"{"applied":false,"renewalDate":"2026-04-01T00:00:00.000Z","status":"active","tier":"pro","userId":"user-1"}"#)
        try expectResult(SubscriptionSyncContract.self, .reconciliation(.init(users: 4, enqueued: 3)), #"{"enqueued":3,"users":4}"#)
    }

    // MARK: Reading results

    @Test func aRecordsResultIsReadAsItsContractsResult() throws {
        let record = try #require(
            JobRecord(
                id: .random(), queue: "ai",
                fields: ["kind": "analysis", "status": "succeeded", "result": #"{"mealId":9,"# + Self.analysis],
                inDeadSet: false))
        #expect(try record.result(as: AnalysisContract.self)?.mealId == 9)
        #expect(try record.result(as: AnalysisContract.self)?.analysis.compositeItemName == "Toast")
        // Another kind's contract is refused, not decoded by luck.
        #expect(throws: DecodingError.self) { try record.result(as: ChatContract.self) }
        let running = try #require(
            JobRecord(id: .random(), queue: "ai", fields: ["kind": "analysis", "status": "running"], inDeadSet: false))
        #expect(try running.result(as: AnalysisContract.self) == nil)
    }

    static let analysis =
        #""analysis":{"analysis":"-","carbEstimate":45,"compositeItemName":"Toast","confidenceHigh":50,"confidenceLevel":1,"confidenceLow":40}}"#

    // MARK: The wire format

    /// The typed enqueue writes, byte for byte, the payload `LoginRoutes` and `LoginRecorder` built by hand before
    /// the contract existed.
    @Test(arguments: [(nil, nil), ("ann@example.com", "Ann")] as [(String?, String?)])
    func theTypedEnqueueWritesTheHandBuiltLoginWebhookPayload(email: String?, name: String?) async throws {
        let yaml = try String(contentsOfFile: repositoryJobsDirectory() + "/login-webhook.yml", encoding: .utf8)
        let env = try TestEnvironment(kinds: ["login-webhook": yaml])
        defer { Task { await env.cleanUp() } }
        let eventID = UUID().uuidString.lowercased()
        let handBuilt: JSONValue = [
            "event": .string("signin"), "eventId": .string(eventID), "provider": .string("google"), "provider_uid": .string("1087"),
            "email": email.map(JSONValue.string) ?? .null, "display_name": name.map(JSONValue.string) ?? .null,
            "client_timestamp": .string("2026-03-08T07:00:00.123Z"),
        ]
        let parameters = LoginWebhookContract.Parameters(
            event: .signin, eventId: eventID, provider: "google", providerUID: "1087", email: email, displayName: name,
            clientTimestamp: "2026-03-08T07:00:00.123Z")
        let options = EnqueueOptions(owner: "user-1")
        let typed = try requireID(try await env.queue.enqueue(LoginWebhookContract.self, parameters, options: options))
        let untyped = try requireID(try await env.queue.enqueue("login-webhook", payload: handBuilt, options: options))
        let written = try #require(try await env.queue.record(typed)).payload
        #expect(written == (try #require(try await env.queue.record(untyped)).payload))
        #expect(written == handBuilt.jsonString)
    }
}

/// The result encodes to exactly `text` (the bytes kept with the job) and decodes back to itself.
private func expectResult<C: JobContract>(
    _ contract: C.Type, _ result: C.Result, _ text: String, sourceLocation: SourceLocation = #_sourceLocation
) throws where C.Result: Equatable {
    #expect(try JSONValueEncoder().encode(result).jsonString == text, sourceLocation: sourceLocation)
    #expect(try JSONValueDecoder().decode(C.Result.self, fromJSON: text) == result, sourceLocation: sourceLocation)
}

/// The parameters encode to exactly `text` (the payload enqueued), built without Codable (`jsonValue()`, what a typed
/// enqueue writes) as through it, and decode back to themselves.
private func expectPayload<Parameters: Codable & Equatable & JSONValueConvertible>(
    _ parameters: Parameters, _ text: String, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(try JSONValueEncoder().encode(parameters).jsonString == text, sourceLocation: sourceLocation)
    #expect(try parameters.jsonValue().jsonString == text, sourceLocation: sourceLocation)
    #expect(try JSONValueDecoder().decode(Parameters.self, fromJSON: text) == parameters, sourceLocation: sourceLocation)
}
