import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import JSON
import OutboundHTTP
import Queue
import Store
import Testing
import Workers

/// `POST /webhooks/stripe` (Stripe's signature scheme, one job per event) and `POST /subscriptions/sync`.
@Suite struct BillingRoutesTests {
    static let secret = "whsec_test_0123456789abcdef"
    static let environment = ["STRIPE_WEBHOOK_SECRET": secret]
    static let signatureHeader = HTTPField.Name("Stripe-Signature")!

    /// `t=<t>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, as Stripe signs.
    static func signature(_ body: String, secret: String = secret, at time: Int = Int(Date().timeIntervalSince1970)) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(time).\(body)".utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return "t=\(time),v1=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    static func event(
        id: String = "evt_\(UUID().uuidString.prefix(8))", type: String = "customer.subscription.updated", created: Int = 1_763_800_000,
        subscription: String = "sub_123", userID: String? = nil
    ) -> String {
        let metadata: JSONValue = userID.map { ["userId": .string($0)] } ?? [:]
        let event: JSONValue = [
            "id": .string(id), "object": "event", "type": .string(type), "created": .int(created), "livemode": false,
            "data": [
                "object": [
                    "id": .string(subscription), "object": "subscription", "customer": "cus_1", "status": "active",
                    "current_period_end": 1_766_400_000, "items": ["data": [["price": ["id": "price_ess"]]]], "metadata": metadata,
                ]
            ],
        ]
        return event.jsonString
    }

    static func post(_ client: any TestClientProtocol, _ body: String, signature: String?) async throws -> CallResult {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let signature { headers[signatureHeader] = signature }
        return try await client.call(.post, "webhooks/stripe", body: body, headers: headers)
    }

    static func billingQueued(_ api: TestAPI) async throws -> Int {
        try await api.queue.stats().first { $0.queue == "billing" }?.queued ?? 0
    }

    @Test func aSignedSubscriptionEventEnqueuesOneSyncPerEvent() async throws {
        try await TestAPI.run(environment: Self.environment) { api, client in
            let body = Self.event(id: "evt_once", created: 1_763_800_123, subscription: "sub_abc", userID: "user-42")
            let response = try await Self.post(client, body, signature: Self.signature(body))
            #expect(response.status == 200, "\(response.text)")
            #expect(response.data["received"].bool == true)
            let jobID = try #require(response.data["jobId"].string)
            let id = try #require(JobID(rawValue: jobID))
            let record = try #require(try await api.queue.record(id))
            #expect(record.kind == "subscription-sync")
            let payload = try JSONValue(parsing: record.payload)
            #expect(payload == ["source": "webhook", "subscriptionId": "sub_abc", "eventCreated": 1_763_800_123, "userId": "user-42"])

            // Stripe re-sends the event (a later delivery signs it again with a fresh timestamp): still one job.
            let again = try await Self.post(client, body, signature: Self.signature(body))
            #expect(again.status == 200)
            #expect(again.data["jobId"].string == jobID)
            #expect(try await Self.billingQueued(api) == 1)
        }
    }

    @Test func badSignaturesAreRefusedAndEnqueueNothing() async throws {
        try await TestAPI.run(environment: Self.environment) { api, client in
            let body = Self.event()
            let now = Int(Date().timeIntervalSince1970)
            let tampered = body.replacingOccurrences(of: "sub_123", with: "sub_999")
            let refusals: [(String, String, String?)] = [
                ("wrong secret", body, Self.signature(body, secret: "whsec_other")),
                ("tampered body", tampered, Self.signature(body)),
                ("old timestamp", body, Self.signature(body, at: now - 301)),
                ("missing header", body, nil),
                ("no v1", body, "t=\(now)"),
                ("garbage", body, "nonsense"),
            ]
            for (name, sent, signature) in refusals {
                let response = try await Self.post(client, sent, signature: signature)
                #expect(response.status == 400, "\(name): \(response.text)")
                #expect(response.errorCode == "INVALID_SIGNATURE", "\(name)")
            }
            #expect(try await Self.billingQueued(api) == 0)
        }
    }

    /// While a secret is rolled Stripe signs with both: any v1 may match. A timestamp within the tolerance passes.
    @Test func anyMatchingSignatureWithinTheTolerancePasses() async throws {
        try await TestAPI.run(environment: Self.environment) { api, client in
            let body = Self.event()
            let time = Int(Date().timeIntervalSince1970) - 200
            let old = Self.signature(body, secret: "whsec_retired", at: time)
            let current = Self.signature(body, at: time)
            let header = old + "," + current.split(separator: ",")[1]
            let response = try await Self.post(client, body, signature: header)
            #expect(response.status == 200, "\(response.text)")
            #expect(try await Self.billingQueued(api) == 1)
        }
    }

    @Test func otherEventTypesAreAcknowledgedAndIgnored() async throws {
        try await TestAPI.run(environment: Self.environment) { api, client in
            let body = Self.event(type: "invoice.paid")
            let response = try await Self.post(client, body, signature: Self.signature(body))
            #expect(response.status == 200)
            #expect(response.data["ignored"].bool == true)
            #expect(try await Self.billingQueued(api) == 0)
        }
    }

    @Test func withoutASecretTheWebhookIsAConfigurationError() async throws {
        try await TestAPI.run { api, client in
            let body = Self.event()
            let response = try await Self.post(client, body, signature: Self.signature(body))
            #expect(response.status == 503)  // the operator's fault, not a server bug
            #expect(response.errorCode == "CONFIGURATION_ERROR")
            #expect(try await Self.billingQueued(api) == 0)
        }
    }

    /// With no worker running the wait runs out: 202 with the job, whose payload names the stored subscription.
    @Test func syncAnswers202WithTheJobWhenNoWorkerRuns() async throws {
        try await TestAPI.run(environment: Self.environment) { api, client in
            let account = try await api.register(client)
            #expect(try await client.call(.post, "subscriptions/sync").status == 401)
            try await api.database.execute("UPDATE users SET stripe_subscription_id = 'sub_mine' WHERE id = $1", [account.id])
            let response = try await client.call(.post, "subscriptions/sync", token: account.accessToken)
            #expect(response.status == 202, "\(response.text)")
            let jobID = try #require(response.data["jobId"].string)
            #expect(response.headers[.location] == "/api/mobile/v1/jobs/\(jobID)")
            let id = try #require(JobID(rawValue: jobID))
            let record = try #require(try await api.queue.record(id))
            #expect(record.owner == account.id)
            #expect(
                try JSONValue(parsing: record.payload) == ["source": "app", "userId": .string(account.id), "subscriptionId": "sub_mine"])
        }
    }

    /// With a worker in this process the app gets the state at once (a user with no stored subscription needs no
    /// provider read).
    @Test func syncAnswers200WithTheStateWhenTheJobFinishes() async throws {
        try await TestAPI.run(environment: Self.environment) { api, client in
            let account = try await api.register(client)
            try await api.setTier(.essentials, userID: account.id)
            let (worker, task) = api.startWorker(queue: "billing", concurrency: 2)
            let response = try await client.call(.post, "subscriptions/sync", token: account.accessToken)
            worker.stop()
            try await task.value
            #expect(response.status == 200, "\(response.text)")
            #expect(response.data["userId"].string == account.id)
            #expect(response.data["tier"].string == "essentials")
            #expect(response.data["status"].string == "active")
            #expect(response.json["data"]["renewalDate"].exists)
        }
    }
}
