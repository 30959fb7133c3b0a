import AppStore
import Foundation
import JobContracts
import Queue
import Store

/// The `subscription-sync` kind (jobs/subscription-sync.yml): reads one subscription from the provider (Stripe's
/// `GET /v1/subscriptions/{id}`) and stores its tier, status and renewal date on the user it belongs to.
///
/// The job never trusts a webhook's copy of the subscription: it reads the current one, so a re-delivered or late job
/// stores the truth. Each state carries a provider time (the event's `created`, or the read time for app syncs and
/// reconciliation) and is stored only when no newer state was stored before, so out-of-order jobs converge.
/// The nightly reconciliation (no subscription id) enqueues one sync per subscribed user instead.
package struct SubscriptionSyncJob: JobKind {
    package typealias Contract = SubscriptionSyncContract

    /// Users read per page by the reconciliation, each page enqueued in one round trip.
    static let reconciliationPage = 500

    let services: WorkerServices

    package init(services: WorkerServices) {
        self.services = services
    }

    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        if parameters.source == .reconciliation, parameters.subscriptionId == nil, parameters.userId == nil {
            return .reconciliation(try await reconcile(context))
        }
        let subscriptions = Subscriptions(services.database)
        if parameters.source == .appstore {
            guard let signed = parameters.signedTransaction else {
                throw JobFailure.permanent("an appstore sync carries no signedTransaction")
            }
            return .state(try await applyAppStore(signed, userID: parameters.userId, context: context))
        }
        var subscriptionID = parameters.subscriptionId
        if subscriptionID == nil, let userID = parameters.userId {
            subscriptionID = try await subscriptions.subscriptionID(userID: userID)
            if subscriptionID == nil, let signed = try await subscriptions.appStoreTransaction(userID: userID) {
                // An App Store subscriber: its last verified transaction, read again now (an expiry no notification
                // reported ends the paid tier here).
                return .state(try await applyAppStore(signed, userID: userID, context: context))
            }
            if subscriptionID == nil {
                // Nothing at the provider to read: the user's state is what the app should see.
                guard let state = try await subscriptions.state(userID: userID) else {
                    throw JobFailure.permanent("user \(userID) does not exist")
                }
                return .state(Self.result(state, applied: false))
            }
        }
        guard let subscriptionID else { throw JobFailure.permanent("the payload names neither a subscription nor a user") }
        guard let key = services.settings.stripeSecretKey else {
            throw JobFailure.permanent("subscription provider is not configured: STRIPE_SECRET_KEY is not set")
        }
        let readAt = Date()
        try await services.acquire(forKind: Self.name)
        let subscription = try await StripeClient(http: services.http, base: services.settings.stripeAPIBase, secretKey: key)
            .subscription(subscriptionID)
        let stateAt = parameters.eventCreated.map { Date(timeIntervalSince1970: TimeInterval($0)) } ?? readAt
        let update = try SubscriptionMapping(priceTiers: services.settings.stripePriceTiers).update(for: subscription, stateAt: stateAt)

        let owner: String
        if let stored = try await subscriptions.userID(subscriptionID: subscription.id) {
            owner = stored
        } else if let named = subscription.metadataUserID ?? parameters.userId {
            owner = named
        } else {
            throw JobFailure.permanent("subscription \(subscription.id) belongs to no user: none stores it and its metadata has no userId")
        }
        let scanReset = update.tier.nextScanReset(after: Date(), in: services.settings.scanResetTimeZone)
        let outcome = try await subscriptions.apply(update, userID: owner, scanReset: scanReset)
        return .state(try Self.result(outcome, subscription: "subscription \(subscription.id)", owner: owner, context: context))
    }

    /// Stores what a StoreKit 2 transaction says, after verifying it as the API did (the job trusts nothing it did
    /// not check itself). Its signing time orders it: an older notification never overwrites a newer state.
    func applyAppStore(_ signed: String, userID: String?, context: JobContext) async throws -> SubscriptionSyncContract.State {
        guard let appStore = services.settings.appStore else {
            throw JobFailure.permanent("App Store purchases are not configured: APPSTORE_BUNDLE_ID is not set")
        }
        let transaction: AppStoreTransaction
        let update: SubscriptionUpdate
        do {
            transaction = try await appStore.verifier.transaction(signed)
            update = try appStore.products.update(for: transaction, now: Date())
        } catch {
            throw JobFailure.permanent("App Store transaction refused: \(error.message)")
        }
        let subscriptions = Subscriptions(services.database)
        var owner = try await subscriptions.userID(appStoreOriginalTransactionID: transaction.originalTransactionId) ?? userID
        if owner == nil, let token = transaction.appAccountToken?.lowercased(), try await subscriptions.state(userID: token) != nil {
            owner = token
        }
        guard let owner else {
            throw JobFailure.permanent(
                "App Store subscription \(transaction.originalTransactionId) belongs to no user: none validated it and its appAccountToken names none"
            )
        }
        let scanReset = update.tier.nextScanReset(after: Date(), in: services.settings.scanResetTimeZone)
        let outcome = try await subscriptions.applyAppStore(update, signedTransaction: signed, userID: owner, scanReset: scanReset)
        return try Self.result(
            outcome, subscription: "App Store subscription \(transaction.originalTransactionId)", owner: owner, context: context)
    }

    /// The job's result for what `apply` did, either provider.
    static func result(
        _ outcome: Subscriptions.Outcome, subscription: String, owner: String, context: JobContext
    ) throws -> SubscriptionSyncContract.State {
        switch outcome {
        case .applied(let state):
            return result(state, applied: true)
        case .unchanged(let state):
            context.logger.info(
                "subscription state not applied: a newer one is stored", metadata: ["subscription": "\(subscription)", "user": "\(owner)"])
            return result(state, applied: false)
        case .noSuchUser:
            throw JobFailure.permanent("\(subscription) names user \(owner), who does not exist")
        }
    }

    /// One sync job per user with a stored subscription, enqueued page by page. Each job's uniqueness key names this
    /// reconciliation job, so a re-delivered reconciliation enqueues nothing twice.
    func reconcile(_ context: JobContext) async throws -> SubscriptionSyncContract.Reconciliation {
        let queue = JobQueue(redis: services.redis, catalog: services.catalog, options: QueueOptions(prefix: services.prefix))
        let subscriptions = Subscriptions(services.database)
        var after: String?
        var enqueued = 0
        var users = 0
        while true {
            try Task.checkCancellation()
            let page = try await subscriptions.subscribedUsers(after: after, limit: Self.reconciliationPage)
            guard let last = page.last else { break }
            let jobs = page.map { user in
                (
                    parameters: Parameters(userId: user.userID, subscriptionId: user.subscriptionID, source: .reconciliation),
                    options: EnqueueOptions(
                        uniqueKey: "subscription-sync:reconcile:\(context.id.rawValue):\(user.userID)", owner: user.userID)
                )
            }
            enqueued += try await queue.enqueue(Contract.self, jobs).filter { $0.id != nil }.count
            users += page.count
            after = last.userID
        }
        return .init(users: users, enqueued: enqueued)
    }

    static func result(_ state: SubscriptionState, applied: Bool) -> SubscriptionSyncContract.State {
        .init(
            userId: state.userID, tier: state.tier.rawValue, status: state.status, renewalDate: state.renewalDate.map(Self.timestamp),
            applied: applied)
    }

    private static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

/// Stripe's subscription statuses and prices in CarbScan's terms.
struct SubscriptionMapping {
    /// Price id → tier name (`STRIPE_PRICE_TIERS`).
    var priceTiers: [String: String]

    /// active and trialing keep their status and get the price's tier; past_due keeps the paid tier while Stripe
    /// retries the payment; canceled, unpaid, incomplete_expired and paused are the free tier; incomplete (first
    /// payment pending) is the free tier until it is paid. A price with no tier is a configuration error, never
    /// guessed: the job dies with the price id.
    func update(for subscription: StripeSubscription, stateAt: Date) throws -> SubscriptionUpdate {
        let tier: Tier
        let status: String
        switch subscription.status {
        case "active", "trialing", "past_due":
            tier = try paidTier(subscription)
            status = subscription.status
        case "canceled", "unpaid", "incomplete_expired", "paused":
            tier = .free
            status = "canceled"
        case "incomplete":
            tier = .free
            status = "incomplete"
        default:
            throw JobFailure.permanent("subscription \(subscription.id) has an unknown status '\(subscription.status.prefix(40))'")
        }
        return SubscriptionUpdate(
            subscriptionID: subscription.id, customerID: subscription.customer, tier: tier, status: status,
            renewalDate: tier == .free ? nil : subscription.currentPeriodEnd, stateAt: stateAt,
            isLive: ["active", "trialing", "past_due"].contains(subscription.status))
    }

    private func paidTier(_ subscription: StripeSubscription) throws -> Tier {
        guard let price = subscription.priceIDs.first else {
            throw JobFailure.permanent("subscription \(subscription.id) has no price")
        }
        guard let name = priceTiers[price], let tier = Tier(rawValue: name) else {
            throw JobFailure.permanent("subscription \(subscription.id) has price \(price), which maps to no tier (STRIPE_PRICE_TIERS)")
        }
        return tier
    }
}
