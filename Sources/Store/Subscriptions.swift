import Foundation
import Postgres

/// A user's subscription as the app sees it (seed 000: tier, status, renewal date).
package struct SubscriptionState: Sendable, Equatable {
    package var userID: String
    package var tier: Tier
    package var status: String
    package var renewalDate: Date?
}

/// The provider's view of one subscription, mapped to CarbScan's terms, ready to be stored on a user.
package struct SubscriptionUpdate: Sendable {
    package var subscriptionID: String
    package var customerID: String?
    package var tier: Tier
    package var status: String
    package var renewalDate: Date?
    /// The provider time this state is true at; older states never overwrite newer ones.
    package var stateAt: Date
    /// A live subscription (active, trialing, past due) may replace another one stored on the user; an ended one
    /// only ever changes the user it is stored on, so the end of an old subscription cannot downgrade a new one.
    package var isLive: Bool

    package init(
        subscriptionID: String, customerID: String?, tier: Tier, status: String, renewalDate: Date?, stateAt: Date, isLive: Bool
    ) {
        self.subscriptionID = subscriptionID
        self.customerID = customerID
        self.tier = tier
        self.status = status
        self.renewalDate = renewalDate
        self.stateAt = stateAt
        self.isLive = isLive
    }
}

/// Users' subscription columns: tier, status, renewal date, the provider ids, and the scan quota that follows the tier.
package struct Subscriptions: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// What `apply` did.
    package enum Outcome: Sendable, Equatable {
        case applied(SubscriptionState)
        /// A newer state was applied before (or another subscription is stored on the user): nothing changed.
        case unchanged(SubscriptionState)
        case noSuchUser
    }

    package func state(userID: String) async throws -> SubscriptionState? {
        try await db.query(
            "SELECT id, subscription_tier, subscription_status, subscription_renewal_date FROM users WHERE id = $1", [userID]
        ).first.map(Self.state)
    }

    /// The provider subscription stored on the user, if any.
    package func subscriptionID(userID: String) async throws -> String? {
        guard let row = try await db.query("SELECT stripe_subscription_id FROM users WHERE id = $1", [userID]).first else { return nil }
        return try row.decode("stripe_subscription_id", as: String?.self)
    }

    /// The user the subscription is stored on.
    package func userID(subscriptionID: String) async throws -> String? {
        guard
            let row = try await db.query("SELECT id FROM users WHERE stripe_subscription_id = $1 ORDER BY id LIMIT 1", [subscriptionID])
                .first
        else { return nil }
        return try row.decode("id", as: String.self)
    }

    /// One page of users with a stored subscription, by id after `afterUserID` (keyset paging: no long scans or locks).
    package func subscribedUsers(after afterUserID: String?, limit: Int) async throws -> [(userID: String, subscriptionID: String)] {
        try await db.query(
            """
            SELECT id, stripe_subscription_id FROM users
            WHERE stripe_subscription_id IS NOT NULL AND ($1::text IS NULL OR id > $1)
            ORDER BY id LIMIT $2
            """, [afterUserID, limit]
        ).map { (try $0.decode("id", as: String.self), try $0.decode("stripe_subscription_id", as: String.self)) }
    }

    /// Stores `update` on the user in one guarded UPDATE: only when no newer state was applied before, so concurrent
    /// or re-ordered syncs converge on the newest state. A tier change also starts the new tier's scan quota, reset
    /// at `scanReset` (the new tier's next reset).
    package func apply(_ update: SubscriptionUpdate, userID: String, scanReset: Date) async throws -> Outcome {
        try await apply(
            update, userID: userID, scanReset: scanReset, idColumn: "stripe_subscription_id",
            also: ("stripe_customer_id = COALESCE($3, stripe_customer_id)", update.customerID))
    }

    /// The user an App Store subscription (its original transaction id) is stored on.
    package func userID(appStoreOriginalTransactionID id: String) async throws -> String? {
        try await db.query("SELECT id FROM users WHERE appstore_original_transaction_id = $1", [id]).first?.decode("id")
    }

    /// The last verified signed transaction stored on the user, if the user subscribed through the App Store.
    package func appStoreTransaction(userID: String) async throws -> String? {
        guard let row = try await db.query("SELECT appstore_signed_transaction FROM users WHERE id = $1", [userID]).first else {
            return nil
        }
        return try row.decode("appstore_signed_transaction", as: String?.self)
    }

    /// Stores an App Store state on the user with the same guards as `apply`: never over a newer state, and an ended
    /// subscription never changes a user who has another one. The signed transaction it came from is kept.
    package func applyAppStore(
        _ update: SubscriptionUpdate, signedTransaction: String, userID: String, scanReset: Date
    ) async throws -> Outcome {
        try await apply(
            update, userID: userID, scanReset: scanReset, idColumn: "appstore_original_transaction_id",
            also: ("appstore_signed_transaction = $3", signedTransaction))
    }

    /// One guarded UPDATE for either provider: `idColumn` holds the provider's subscription id, `also` sets one more
    /// column from `$3`.
    private func apply(
        _ update: SubscriptionUpdate, userID: String, scanReset: Date, idColumn: String, also: (set: String, value: String?)
    ) async throws -> Outcome {
        // In SET, column references read the row before the update: `subscription_tier <> $4` is the old tier.
        let rows = try await db.query(
            """
            UPDATE users SET
                \(idColumn) = $2,
                \(also.set),
                remaining_scans = CASE WHEN subscription_tier <> $4 THEN $7 ELSE remaining_scans END,
                scan_reset_date = CASE WHEN subscription_tier <> $4 THEN $8 ELSE scan_reset_date END,
                subscription_tier = $4,
                subscription_status = $5,
                subscription_renewal_date = $6,
                subscription_state_at = $9,
                subscription_synced_at = now(),
                updated_at = now()
            WHERE id = $1
              AND (subscription_state_at IS NULL OR subscription_state_at <= $9)
              AND (\(idColumn) IS NULL OR \(idColumn) = $2 OR $10)
            RETURNING id, subscription_tier, subscription_status, subscription_renewal_date
            """,
            [
                userID, update.subscriptionID, also.value, update.tier.rawValue, update.status, update.renewalDate,
                update.tier.scanLimit, scanReset, update.stateAt, update.isLive,
            ])
        if let row = rows.first { return .applied(try Self.state(row)) }
        guard let current = try await state(userID: userID) else { return .noSuchUser }
        return .unchanged(current)
    }

    private static func state(_ row: PostgresRow) throws -> SubscriptionState {
        SubscriptionState(
            userID: try row.decode("id"), tier: Tier(rawValue: try row.decode("subscription_tier", as: String.self)) ?? .free,
            status: try row.decode("subscription_status"), renewalDate: try row.decode("subscription_renewal_date"))
    }
}
