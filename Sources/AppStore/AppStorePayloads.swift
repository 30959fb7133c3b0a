import Foundation
import JWTKit

/// A StoreKit 2 transaction as Apple signs it (`JWSTransactionDecodedPayload`); times are Unix milliseconds.
public struct AppStoreTransaction: JWTPayload, Equatable {
    public var transactionId: String
    public var originalTransactionId: String
    public var bundleId: String
    public var productId: String
    public var purchaseDate: Int64
    public var expiresDate: Int64?
    /// `Production` or `Sandbox`.
    public var environment: String
    /// `Auto-Renewable Subscription`, `Non-Consumable`, …
    public var type: String?
    /// Set when Apple refunded or revoked the transaction.
    public var revocationDate: Int64?
    public var signedDate: Int64
    /// The app's account id for the buyer, when the app set one at purchase (a UUID).
    public var appAccountToken: String?

    public var signedAt: Date { Date(timeIntervalSince1970: TimeInterval(signedDate) / 1000) }

    // The chain and signature are checked by `AppStoreVerifier`; the payload's own fields by its callers.
    public func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// An App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`), the part this server reads.
public struct AppStoreNotification: JWTPayload, Equatable {
    public struct Data: Codable, Sendable, Equatable {
        public var bundleId: String?
        public var environment: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
    }

    /// `SUBSCRIBED`, `DID_RENEW`, `EXPIRED`, `REFUND`, `REVOKE`, `DID_FAIL_TO_RENEW`, `TEST`, …
    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    public var data: Data?
    public var signedDate: Int64
    public var version: String?

    public var signedAt: Date { Date(timeIntervalSince1970: TimeInterval(signedDate) / 1000) }

    public func verify(using algorithm: some JWTAlgorithm) throws {}
}
