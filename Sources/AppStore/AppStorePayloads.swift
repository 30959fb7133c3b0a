import Foundation
import JWTKit

/// A StoreKit 2 transaction as Apple signs it (`JWSTransactionDecodedPayload`); times are Unix milliseconds.
package struct AppStoreTransaction: JWTPayload, Equatable {
    package var transactionId: String
    package var originalTransactionId: String
    package var bundleId: String
    package var productId: String
    package var purchaseDate: Int64
    package var expiresDate: Int64?
    /// `Production` or `Sandbox`.
    package var environment: String
    /// `Auto-Renewable Subscription`, `Non-Consumable`, …
    package var type: String?
    /// Set when Apple refunded or revoked the transaction.
    package var revocationDate: Int64?
    package var signedDate: Int64
    /// The app's account id for the buyer, when the app set one at purchase (a UUID).
    package var appAccountToken: String?

    package var signedAt: Date { Date(timeIntervalSince1970: TimeInterval(signedDate) / 1000) }

    // The chain and signature are checked by `AppStoreVerifier`; the payload's own fields by its callers.
    package func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// An App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`), the part this server reads.
package struct AppStoreNotification: JWTPayload, Equatable {
    package struct Data: Codable, Sendable, Equatable {
        package var bundleId: String?
        package var environment: String?
        package var signedTransactionInfo: String?
        package var signedRenewalInfo: String?
    }

    /// `SUBSCRIBED`, `DID_RENEW`, `EXPIRED`, `REFUND`, `REVOKE`, `DID_FAIL_TO_RENEW`, `TEST`, …
    package var notificationType: String
    package var subtype: String?
    package var notificationUUID: String
    package var data: Data?
    package var signedDate: Int64
    package var version: String?

    package var signedAt: Date { Date(timeIntervalSince1970: TimeInterval(signedDate) / 1000) }

    package func verify(using algorithm: some JWTAlgorithm) throws {}
}
