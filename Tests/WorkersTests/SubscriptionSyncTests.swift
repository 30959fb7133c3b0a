import Foundation
import JSON
import Postgres
import Queue
import Store
import TestSupport
import Testing
import Workers

/// The `subscription-sync` kind run by a real worker against a local Stripe-style subscriptions API and the real store.
@Suite struct SubscriptionSyncTests {
    static let secretKey = "sk_test_subscription_sync_0123456789"
    static let priceTiers = ["price_ess": "essentials", "price_pro": "pro"]

    static func settings(_ stripe: StripeServer, key: String = secretKey) -> WorkerSettings {
        WorkerSettings(stripeAPIBase: stripe.url, stripeSecretKey: key, stripePriceTiers: priceTiers)
    }

    /// Runs `body` with a Stripe server and a worker on the `billing` queue.
    static func run(key: String = secretKey, _ body: @Sendable (WorkerTestEnvironment, StripeServer) async throws -> Void) async throws {
        try await WorkerTestEnvironment.run { env in
            let stripe = try await StripeServer.start(secretKey: secretKey)
            defer { stripe.stop() }
            let (worker, task) = env.startWorker(settings: settings(stripe, key: key), queues: ["billing"])
            do {
                try await body(env, stripe)
            } catch {
                worker.stop()
                _ = try? await task.value
                throw error
            }
            worker.stop()
            try await task.value
        }
    }

    /// Enqueues a sync and waits until it has succeeded or died.
    static func sync(_ env: WorkerTestEnvironment, _ payload: JSONValue) async throws -> JobRecord {
        let id = try #require(try await env.queue.enqueue("subscription-sync", payload: payload).id)
        var record: JobRecord?
        _ = try await eventually(timeout: .seconds(30)) {
            record = try await env.queue.record(id)
            return record?.status == .succeeded || record?.status == .failed
        }
        return try #require(record)
    }

    struct Stored: Equatable {
        var tier: String
        var status: String
        var renewal: Date?
        var remainingScans: Int
        var scanReset: Date
        var subscriptionID: String?
        var customerID: String?
    }

    static func stored(_ env: WorkerTestEnvironment, _ userID: String) async throws -> Stored {
        let rows = try await env.database.query(
            """
            SELECT subscription_tier, subscription_status, subscription_renewal_date, remaining_scans, scan_reset_date,
                   stripe_subscription_id, stripe_customer_id FROM users WHERE id = $1
            """, [userID])
        let row = try #require(rows.first)
        return Stored(
            tier: try row.decode("subscription_tier"), status: try row.decode("subscription_status"),
            renewal: try row.decode("subscription_renewal_date"), remainingScans: try row.decode("remaining_scans"),
            scanReset: try row.decode("scan_reset_date"), subscriptionID: try row.decode("stripe_subscription_id"),
            customerID: try row.decode("stripe_customer_id"))
    }

    static func storeSubscription(_ env: WorkerTestEnvironment, userID: String, subscriptionID: String, tier: Tier) async throws {
        try await env.database.execute(
            "UPDATE users SET stripe_subscription_id = $2, subscription_tier = $3, remaining_scans = 7 WHERE id = $1",
            [userID, subscriptionID, tier.rawValue])
    }

    static var periodEnd: Int { Int(Date().timeIntervalSince1970) + 20 * 86_400 }

    @Test func anActiveEssentialsSubscriptionGivesTheTierItsQuotaAndRenewalDate() async throws {
        try await Self.run { env, stripe in
            let user = try await env.createUser()
            let end = Self.periodEnd
            stripe.put(
                StripeServer.subscription(
                    id: "sub_ess1", customer: "cus_ess1", status: "active", price: "price_ess", periodEnd: end, userID: user.id))
            let before = Date()
            let record = try await Self.sync(
                env, ["source": "webhook", "subscriptionId": "sub_ess1", "eventCreated": .int(Int(before.timeIntervalSince1970))])
            #expect(record.status == .succeeded, "\(record.error ?? "")")
            let result = try JSONValue(parsing: try #require(record.result))
            #expect(result["userId"] == .string(user.id))
            #expect(result["tier"] == "essentials")
            #expect(result["status"] == "active")
            #expect(result["renewalDate"] != nil && result["renewalDate"] != .null)
            let stored = try await Self.stored(env, user.id)
            #expect(stored.tier == "essentials")
            #expect(stored.status == "active")
            #expect(stored.renewal == Date(timeIntervalSince1970: TimeInterval(end)))
            #expect(stored.remainingScans == 90)
            #expect(stored.scanReset == Tier.essentials.nextScanReset(after: before))
            #expect(stored.subscriptionID == "sub_ess1")
            #expect(stored.customerID == "cus_ess1")
        }
    }

    @Test func aCanceledSubscriptionFallsBackToTheFreeTier() async throws {
        try await Self.run { env, stripe in
            let user = try await env.createUser()
            try await Self.storeSubscription(env, userID: user.id, subscriptionID: "sub_gone", tier: .pro)
            stripe.put(StripeServer.subscription(id: "sub_gone", status: "canceled", price: "price_pro", periodEnd: Self.periodEnd))
            let record = try await Self.sync(env, ["source": "app", "userId": .string(user.id)])
            #expect(record.status == .succeeded, "\(record.error ?? "")")
            let stored = try await Self.stored(env, user.id)
            #expect(stored.tier == "free")
            #expect(stored.status == "canceled")
            #expect(stored.remainingScans == 3)
            #expect(stored.renewal == nil)
            #expect(stripe.requested == ["sub_gone"])
        }
    }

    /// Webhooks arrive out of order: an event older than the applied state is read but not stored; a newer one is.
    @Test func anOlderEventNeverOverwritesANewerState() async throws {
        try await Self.run { env, stripe in
            let user = try await env.createUser()
            let now = Int(Date().timeIntervalSince1970)
            stripe.put(
                StripeServer.subscription(id: "sub_order", status: "active", price: "price_pro", periodEnd: Self.periodEnd, userID: user.id)
            )
            let first = try await Self.sync(env, ["source": "webhook", "subscriptionId": "sub_order", "eventCreated": .int(now)])
            #expect(first.status == .succeeded, "\(first.error ?? "")")
            #expect(try await Self.stored(env, user.id).tier == "pro")

            stripe.put(
                StripeServer.subscription(
                    id: "sub_order", status: "canceled", price: "price_pro", periodEnd: Self.periodEnd, userID: user.id))
            let late = try await Self.sync(env, ["source": "webhook", "subscriptionId": "sub_order", "eventCreated": .int(now - 60)])
            #expect(late.status == .succeeded, "\(late.error ?? "")")
            #expect(try JSONValue(parsing: try #require(late.result))["applied"] == .bool(false))
            let kept = try await Self.stored(env, user.id)
            #expect(kept.tier == "pro")
            #expect(kept.status == "active")

            let newer = try await Self.sync(env, ["source": "webhook", "subscriptionId": "sub_order", "eventCreated": .int(now + 60)])
            #expect(newer.status == .succeeded, "\(newer.error ?? "")")
            #expect(try await Self.stored(env, user.id).tier == "free")
        }
    }

    @Test func aMissingSubscriptionIsDeadAtOnceWithTheReason() async throws {
        try await Self.run { env, stripe in
            let record = try await Self.sync(env, ["source": "webhook", "subscriptionId": "sub_nowhere", "eventCreated": 1])
            #expect(record.status == .failed)
            #expect(record.inDeadSet)
            #expect(record.attempts == 1)
            #expect(record.error?.contains("resource_missing") == true, "\(record.error ?? "")")
            #expect(stripe.requested == ["sub_nowhere"])
        }
    }

    /// A wrong key is a configuration error: dead at once, the reason says which setting, and never shows the key.
    @Test func aRefusedKeyIsDeadWithoutLeakingIt() async throws {
        let wrongKey = "sk_test_wrong_key_must_not_leak"
        try await Self.run(key: wrongKey) { env, stripe in
            stripe.put(StripeServer.subscription(id: "sub_key", status: "active", price: "price_ess", periodEnd: Self.periodEnd))
            let record = try await Self.sync(env, ["source": "webhook", "subscriptionId": "sub_key"])
            #expect(record.status == .failed)
            #expect(record.attempts == 1)
            #expect(record.error?.contains("STRIPE_SECRET_KEY") == true, "\(record.error ?? "")")
            #expect(record.error?.contains(wrongKey) == false)
        }
    }

    @Test func aServerErrorIsRetriedThenApplied() async throws {
        try await Self.run { env, stripe in
            let user = try await env.createUser()
            stripe.put(
                StripeServer.subscription(
                    id: "sub_flaky", status: "trialing", price: "price_pro", periodEnd: Self.periodEnd, userID: user.id))
            stripe.script(.init(status: 500))
            let record = try await Self.sync(env, ["source": "webhook", "subscriptionId": "sub_flaky"])
            #expect(record.status == .succeeded, "\(record.error ?? "")")
            #expect(record.attempts == 2)
            #expect(record.errors.first?.error.contains("500") == true)
            #expect(stripe.requested == ["sub_flaky", "sub_flaky"])
            let stored = try await Self.stored(env, user.id)
            #expect(stored.tier == "pro")
            #expect(stored.status == "trialing")
        }
    }

    /// Stripe's 429 says when to come back; the retry is not due before then (the kind's backoff alone is ~5 s).
    @Test func aRateLimitedReadWaitsForRetryAfter() async throws {
        try await Self.run { env, stripe in
            stripe.script(
                .init(
                    status: 429, headers: ["Retry-After": "120"],
                    body: #"{"error": {"type": "invalid_request_error", "code": "rate_limit", "message": "Too many requests"}}"#))
            let id = try #require(
                try await env.queue.enqueue("subscription-sync", payload: ["source": "webhook", "subscriptionId": "sub_busy"]).id)
            var record: JobRecord?
            let retrying = try await eventually {
                record = try await env.queue.record(id)
                return record?.status == .retrying
            }
            #expect(retrying)
            let due = try #require(record?.runAt)
            #expect(due > Date().addingTimeInterval(100))
            #expect(record?.error?.contains("429") == true)
        }
    }

    @Test func aPriceWithNoTierIsDeadAndChangesNothing() async throws {
        try await Self.run { env, stripe in
            let user = try await env.createUser()
            stripe.put(
                StripeServer.subscription(
                    id: "sub_odd", status: "active", price: "price_unknown", periodEnd: Self.periodEnd, userID: user.id))
            let record = try await Self.sync(env, ["source": "webhook", "subscriptionId": "sub_odd"])
            #expect(record.status == .failed)
            #expect(record.attempts == 1)
            #expect(record.error?.contains("price_unknown") == true, "\(record.error ?? "")")
            let stored = try await Self.stored(env, user.id)
            #expect(stored.tier == "free")
            #expect(stored.subscriptionID == nil)
        }
    }

    /// The nightly run re-reads every stored subscription (and only those), one job per user.
    @Test func reconciliationSyncsEverySubscribedUser() async throws {
        try await Self.run { env, stripe in
            let essentials = try await env.createUser()
            let pro = try await env.createUser()
            let lapsed = try await env.createUser()
            let unsubscribed = try await env.createUser()
            try await Self.storeSubscription(env, userID: essentials.id, subscriptionID: "sub_r1", tier: .free)
            try await Self.storeSubscription(env, userID: pro.id, subscriptionID: "sub_r2", tier: .essentials)
            try await Self.storeSubscription(env, userID: lapsed.id, subscriptionID: "sub_r3", tier: .pro)
            stripe.put(StripeServer.subscription(id: "sub_r1", status: "active", price: "price_ess", periodEnd: Self.periodEnd))
            stripe.put(StripeServer.subscription(id: "sub_r2", status: "active", price: "price_pro", periodEnd: Self.periodEnd))
            stripe.put(StripeServer.subscription(id: "sub_r3", status: "unpaid", price: "price_pro", periodEnd: Self.periodEnd))
            let record = try await Self.sync(env, ["source": "reconciliation"])
            #expect(record.status == .succeeded, "\(record.error ?? "")")
            #expect(try JSONValue(parsing: try #require(record.result))["enqueued"] == 3)
            let synced = try await eventually(timeout: .seconds(30)) {
                let tiers = try await [essentials, pro, lapsed].asyncMap { try await Self.stored(env, $0.id).tier }
                return tiers == ["essentials", "pro", "free"]
            }
            #expect(synced)
            #expect(Set(stripe.requested) == ["sub_r1", "sub_r2", "sub_r3"])
            #expect(stripe.requested.count == 3)
            #expect(try await Self.stored(env, unsubscribed.id).tier == "free")
        }
    }
}

extension Array where Element: Sendable {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
