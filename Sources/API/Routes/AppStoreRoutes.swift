import AppStore
import Foundation
import Hummingbird
import JSON
import JobContracts
import Postgres
import Queue
import Store

/// App Store subscriptions (seed 001's "Upcoming" `subscriptions/validate-receipt`; App Store Server Notifications
/// V2 at `webhooks/appstore`). Both take what Apple signed (a StoreKit 2 transaction, a notification) and trust it
/// only after `AppStoreVerifier` has checked its chain to the pinned root, its signature, the app and the
/// environment.
struct AppStoreRoutes {
    let database: PostgresClient
    let queue: JobQueue
    let authenticator: Authenticator
    /// Nil without `APPSTORE_BUNDLE_ID`: both routes answer CONFIGURATION_ERROR.
    let settings: AppStoreSettings?
    let scanResetTimeZone: TimeZone

    /// A notification is a few kilobytes (three certificates, twice); anything far larger is not one.
    static let maxBodyBytes = 128 * 1024
    /// Apple retries an undelivered notification for days; its UUID stays unique a little longer.
    static let notificationUniqueness: Duration = .seconds(7 * 86_400)

    func register(on api: RouteTable) {
        api.post("subscriptions/validate-receipt", validateReceipt)
        api.post("webhooks/appstore", webhook)
    }

    struct Validated: Encodable {
        var userId: String
        var tier: String
        var status: String
        @Nullable var renewalDate: Date?
        var productId: String
        var environment: String
    }

    /// The app sends `Transaction.jwsRepresentation` after a purchase or restore; the caller's tier follows it.
    func validateReceipt(_ request: Request, _ context: APIContext) async throws -> Response {
        let caller = try await authenticator.principal(request)
        let appStore = try configured()
        struct Body: Decodable { var signedTransaction: String }
        let body = try await JSONBody.decode(Body.self, from: request, allowedKeys: ["signedTransaction"])
        let transaction: AppStoreTransaction
        do {
            transaction = try await appStore.verifier.transaction(body.signedTransaction)
        } catch {
            throw Self.refusal(error, field: "signedTransaction")
        }
        let subscriptions = Subscriptions(database)
        if let owner = try await subscriptions.userID(appStoreOriginalTransactionID: transaction.originalTransactionId),
            owner != caller.userID
        {
            throw APIError(
                .conflict, "RECEIPT_IN_USE", "This App Store subscription belongs to another account; restore it there or contact support")
        }
        let update: SubscriptionUpdate
        do {
            update = try appStore.products.update(for: transaction, now: Date())
        } catch {
            throw Self.refusal(error, field: "signedTransaction")
        }
        let scanReset = update.tier.nextScanReset(after: Date(), in: scanResetTimeZone)
        let state: SubscriptionState
        switch try await subscriptions.applyAppStore(
            update, signedTransaction: body.signedTransaction, userID: caller.userID, scanReset: scanReset)
        {
        case .applied(let applied), .unchanged(let applied): state = applied
        case .noSuchUser: throw APIError.unauthorized
        }
        return try Envelope.success(
            Validated(
                userId: state.userID, tier: state.tier.rawValue, status: state.status, renewalDate: state.renewalDate,
                productId: transaction.productId, environment: transaction.environment))
    }

    /// Apple POSTs `{"signedPayload": "<JWS>"}`; a verified notification with a transaction becomes a
    /// `subscription-sync` job (once per notification UUID) that stores the state it signs. Apple retries anything
    /// but a 2xx, so a forged or foreign payload gets a 4xx and a valid one a 200 at once.
    func webhook(_ request: Request, _ context: APIContext) async throws -> Response {
        let appStore = try configured()
        let raw = try await JSONBody.collect(request, limit: Self.maxBodyBytes)
        guard let body = try? JSONValue(parsing: String(buffer: raw)), case .string(let signed)? = body["signedPayload"] else {
            throw APIError.validation("signedPayload", "the body is not an App Store notification: {\"signedPayload\": \"<JWS>\"}")
        }
        let notification: AppStoreNotification
        let transaction: AppStoreTransaction?
        do {
            (notification, transaction) = try await appStore.verifier.notification(signed)
        } catch {
            throw Self.refusal(error, field: "signedPayload")
        }
        guard let transaction, let signedTransaction = notification.data?.signedTransactionInfo else {
            return try Envelope.success(WebhookReceived(received: true, ignored: true, jobId: nil))
        }
        let parameters = SubscriptionSyncContract.Parameters(
            source: .appstore, eventCreated: Int(notification.signedDate / 1000), signedTransaction: signedTransaction,
            notificationType: String(notification.notificationType.prefix(50)))
        let owner = try await Subscriptions(database).userID(appStoreOriginalTransactionID: transaction.originalTransactionId)
        let result = try await queue.enqueue(
            SubscriptionSyncContract.self, parameters,
            options: EnqueueOptions(
                uniqueKey: "subscription-sync:appstore:\(notification.notificationUUID.prefix(64))", uniqueTTL: Self.notificationUniqueness,
                owner: owner))
        return try Envelope.success(WebhookReceived(received: true, ignored: false, jobId: result.jobID?.rawValue))
    }

    private func configured() throws -> AppStoreSettings {
        guard let settings else {
            throw APIError(.serviceUnavailable, "CONFIGURATION_ERROR", "App Store purchases are not configured on this server")
        }
        return settings
    }

    /// 400 `INVALID_RECEIPT` naming what failed (never echoing the token).
    static func refusal(_ error: AppStoreError, field: String) -> APIError {
        APIError(.badRequest, "INVALID_RECEIPT", "The App Store payload was refused: \(error.message)", details: ["field": .string(field)])
    }
}
