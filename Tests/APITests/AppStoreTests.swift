import AppStore
import Foundation
import HummingbirdTesting
import JSON
import Queue
import Settings
import Store
import TestSupport
import Testing
import Workers
import carbscan

/// App Store subscriptions: `subscriptions/validate-receipt`, `webhooks/appstore` and `subscriptions/sync`, with
/// payloads signed by a locally generated chain shaped like Apple's (the server pins its root, as it pins Apple
/// Root CA - G3 in production).
@Suite struct AppStoreTests {
    static let bundleID = "com.carbscan.app"

    /// The settings a server with App Store purchases needs; the root PEM goes to a file, as an operator's would.
    static func environment(_ signer: AppStoreSigner, environments: String = "Production") throws -> [String: String] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("appstore-root-\(UUID().uuidString).pem")
        try signer.rootPEM.write(to: file, atomically: true, encoding: .utf8)
        return [
            "APPSTORE_BUNDLE_ID": bundleID, "APPSTORE_ENVIRONMENTS": environments,
            "APPSTORE_PRODUCT_TIERS": "com.carbscan.pro.monthly=pro,com.carbscan.essentials.monthly=essentials",
            "APPSTORE_ROOT_CERTIFICATES": file.path,
        ]
    }

    static func validate(_ client: any TestClientProtocol, _ token: String, _ jws: String) async throws -> CallResult {
        try await client.call(.post, "subscriptions/validate-receipt", token: token, json: ["signedTransaction": jws])
    }

    @Test func aVerifiedTransactionGivesItsTierAndExpiryToTheCaller() async throws {
        let signer = try AppStoreSigner.make()
        try await TestAPI.run(environment: try Self.environment(signer)) { api, client in
            let account = try await api.register(client)
            let expires = Date() + 30 * 86_400
            let response = try await Self.validate(
                client, account.accessToken, try signer.sign(AppStoreSigner.transaction(expires: expires)))
            #expect(response.status == 200, "\(response.text)")
            #expect(response.data["tier"].string == "pro" && response.data["status"].string == "active")
            #expect(response.data["productId"].string == "com.carbscan.pro.monthly")
            let status = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(status.data["subscription"]["tier"].string == "pro", "\(status.text)")
            #expect(status.data["subscription"]["renewalDate"].string != nil)
            #expect(try await Subscriptions(api.database).userID(appStoreOriginalTransactionID: "2000000123456789") == account.id)

            // The same subscription claimed by another account is refused; the first keeps it.
            let other = try await api.register(client)
            let claimed = try await Self.validate(client, other.accessToken, try signer.sign(AppStoreSigner.transaction()))
            #expect(claimed.status == 409 && claimed.errorCode == "RECEIPT_IN_USE", "\(claimed.text)")
        }
    }

    /// Each way a payload can fail to be Apple's, for this app, in an accepted environment: 400 INVALID_RECEIPT
    /// with the reason, and the caller's tier untouched.
    @Test func forgedForeignAndExpiredPayloadsAreRefused() async throws {
        let signer = try AppStoreSigner.make()
        let stranger = try AppStoreSigner.make()
        let expired = try AppStoreSigner.make(leafValidity: (Date() - 400 * 86_400)..<(Date() - 86_400))
        let developer = try AppStoreSigner.make(markers: false)
        try await TestAPI.run(environment: try Self.environment(signer)) { api, client in
            let account = try await api.register(client)
            let good = try signer.sign(AppStoreSigner.transaction())
            var parts = good.split(separator: ".").map(String.init)
            parts[1] = AppStoreSigner.base64URLForTests(
                Array(AppStoreSigner.transaction(productID: "com.carbscan.pro.yearly").jsonString.utf8))
            let cases: [(String, String, String)] = [
                ("another root", try stranger.sign(AppStoreSigner.transaction()), "pinned root"),
                ("an expired leaf", try expired.sign(AppStoreSigner.transaction()), "expired"),
                ("a changed payload", parts.joined(separator: "."), "signature does not match"),
                ("a leaf without Apple's marker", try developer.sign(AppStoreSigner.transaction()), "does not verify"),
                ("another app", try signer.sign(AppStoreSigner.transaction(bundleID: "com.example.other")), "another app"),
                ("the sandbox", try signer.sign(AppStoreSigner.transaction(environment: "Sandbox")), "Sandbox"),
                ("an unknown product", try signer.sign(AppStoreSigner.transaction(productID: "com.carbscan.gold")), "maps to no tier"),
                ("not a JWS", "not-a-jws", "not a compact JWS"),
            ]
            for (what, jws, reason) in cases {
                let response = try await Self.validate(client, account.accessToken, jws)
                #expect(response.status == 400 && response.errorCode == "INVALID_RECEIPT", "\(what): \(response.text)")
                #expect(response.json["error"]["message"].string?.contains(reason) == true, "\(what): \(response.text)")
            }
            #expect(try await Subscriptions(api.database).state(userID: account.id)?.tier == .free)
        }
    }

    /// A server that takes the sandbox too (TestFlight) accepts sandbox purchases.
    @Test func sandboxPurchasesAreTakenWhenConfigured() async throws {
        let signer = try AppStoreSigner.make()
        try await TestAPI.run(environment: try Self.environment(signer, environments: "Production,Sandbox")) { api, client in
            let account = try await api.register(client)
            let response = try await Self.validate(
                client, account.accessToken,
                try signer.sign(AppStoreSigner.transaction(productID: "com.carbscan.essentials.monthly", environment: "Sandbox")))
            #expect(response.status == 200 && response.data["tier"].string == "essentials", "\(response.text)")
        }
    }

    @Test func withoutABundleIDBothRoutesAnswerConfigurationError() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let validate = try await Self.validate(client, account.accessToken, "x.y.z")
            #expect(validate.status == 503 && validate.errorCode == "CONFIGURATION_ERROR", "\(validate.text)")
            let webhook = try await client.call(.post, "webhooks/appstore", json: ["signedPayload": "x.y.z"])
            #expect(webhook.status == 503 && webhook.errorCode == "CONFIGURATION_ERROR", "\(webhook.text)")
        }
    }

    /// Renewal, refund, then a replayed older renewal: each notification becomes a job; the refund ends the paid
    /// tier, and the older notification, though valid and new to the server, does not bring it back.
    @Test func notificationsChangeTheTierAndAnOlderOneNeverOverwritesANewerState() async throws {
        let signer = try AppStoreSigner.make()
        let environment = try Self.environment(signer)
        try await TestAPI.run(environment: environment) { api, client in
            let account = try await api.register(client)
            let start = Date()
            let bought = try await Self.validate(
                client, account.accessToken, try signer.sign(AppStoreSigner.transaction(signed: start - 120)))
            #expect(bought.status == 200)
            var settings = WorkerSettings()
            settings.appStore = try AppStoreSettings(environment: EnvironmentReader(environment))
            let (worker, task) = api.startWorker(queue: "billing", settings: settings)
            defer { worker.stop() }

            func notify(_ type: String, signed: Date, revoked: Date? = nil) async throws -> JobRecord {
                let transaction = try signer.sign(
                    AppStoreSigner.transaction(expires: signed + 30 * 86_400, signed: signed, revoked: revoked))
                let body = try signer.sign(AppStoreSigner.notification(type: type, signedTransaction: transaction, signed: signed))
                let response = try await client.call(.post, "webhooks/appstore", json: ["signedPayload": body])
                #expect(response.status == 200, "\(response.text)")
                let id = try #require(response.data["jobId"].string.flatMap(JobID.init(rawValue:)))
                var record: JobRecord?
                _ = try await eventually {
                    record = try await api.queue.record(id)
                    return record?.status == .succeeded || record?.status == .failed
                }
                return try #require(record)
            }
            let renewed = try await notify("DID_RENEW", signed: start - 60)
            #expect(renewed.status == .succeeded, "\(renewed.error ?? "")")
            #expect(try await Subscriptions(api.database).state(userID: account.id)?.tier == .pro)

            let refunded = try await notify("REFUND", signed: start - 30, revoked: start - 30)
            #expect(refunded.status == .succeeded, "\(refunded.error ?? "")")
            var state = try #require(try await Subscriptions(api.database).state(userID: account.id))
            #expect(state.tier == .free && state.status == "revoked")

            let replayed = try await notify("DID_RENEW", signed: start - 45)
            #expect(try JSONValue(parsing: try #require(replayed.result))["applied"] == false)
            state = try #require(try await Subscriptions(api.database).state(userID: account.id))
            #expect(state.tier == .free && state.status == "revoked")

            // A notification that is not Apple's is refused before anything is enqueued.
            let forged = try AppStoreSigner.make().sign(AppStoreSigner.notification(type: "DID_RENEW", signedTransaction: nil))
            let refused = try await client.call(.post, "webhooks/appstore", json: ["signedPayload": forged])
            #expect(refused.status == 400 && refused.errorCode == "INVALID_RECEIPT")
            worker.stop()
            try await task.value
        }
    }

    /// `subscriptions/sync` for an App Store subscriber reads its stored signed transaction again: an expiry that
    /// no notification reported ends the paid tier.
    @Test func syncEndsAnExpiredAppStoreSubscription() async throws {
        let signer = try AppStoreSigner.make()
        let environment = try Self.environment(signer)
        try await TestAPI.run(environment: environment) { api, client in
            let account = try await api.register(client)
            let bought = try await Self.validate(
                client, account.accessToken, try signer.sign(AppStoreSigner.transaction(expires: Date() + 1.5)))
            #expect(bought.status == 200 && bought.data["tier"].string == "pro", "\(bought.text)")
            try await Task.sleep(for: .seconds(2))
            var settings = WorkerSettings()
            settings.appStore = try AppStoreSettings(environment: EnvironmentReader(environment))
            let (worker, task) = api.startWorker(queue: "billing", settings: settings)
            let synced = try await client.call(.post, "subscriptions/sync", token: account.accessToken)
            worker.stop()
            try await task.value
            #expect(synced.status == 200, "\(synced.text)")
            #expect(synced.data["tier"].string == "free" && synced.data["status"].string == "expired", "\(synced.text)")
        }
    }
}

extension AppStoreSigner {
    static func base64URLForTests(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
