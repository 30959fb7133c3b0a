import Foundation
import Store

/// App Store products in CarbScan's terms (`APPSTORE_PRODUCT_TIERS`: `com.carbscan.pro.monthly=pro,…`), and the
/// state a signed transaction gives its buyer.
package struct AppStoreProducts: Sendable, Equatable {
    package var tiers: [String: Tier]

    package init(tiers: [String: Tier]) {
        self.tiers = tiers
    }

    /// `product=tier` pairs, comma-separated; an unknown tier name is refused (nil), never guessed.
    package static func parse(_ text: String) -> AppStoreProducts? {
        var tiers: [String: Tier] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, let tier = Tier(rawValue: parts[1]), tier != .free else { return nil }
            tiers[parts[0]] = tier
        }
        return AppStoreProducts(tiers: tiers)
    }

    /// The product's tier while the subscription runs (not past `expiresDate`, not refunded or revoked); the free
    /// tier once it has ended. `stateAt` is Apple's signing time, so an older signed state never overwrites a newer
    /// one (the same guard as Stripe's event times).
    package func update(for transaction: AppStoreTransaction, now: Date) throws(AppStoreError) -> SubscriptionUpdate {
        guard let paid = tiers[transaction.productId] else {
            throw AppStoreError(.unknownProduct, "product \(transaction.productId.prefix(100)) maps to no tier (APPSTORE_PRODUCT_TIERS)")
        }
        let expires = transaction.expiresDate.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) }
        let status: String
        if transaction.revocationDate != nil {
            status = "revoked"
        } else if let expires, expires <= now {
            status = "expired"
        } else {
            status = "active"
        }
        let live = status == "active"
        return SubscriptionUpdate(
            subscriptionID: transaction.originalTransactionId, customerID: nil, tier: live ? paid : .free, status: status,
            renewalDate: live ? expires : nil, stateAt: transaction.signedAt, isLive: live)
    }
}
