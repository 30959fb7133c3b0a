import Queue

/// `subscription-sync` (jobs/subscription-sync.yml): reads a subscription from its provider (Stripe, or a StoreKit 2
/// transaction for the App Store) and stores the user's tier, status and renewal date; or, for the nightly
/// reconciliation, enqueues one such sync per subscribed user.
package enum SubscriptionSyncContract: JobContract {
    package static let name = "subscription-sync"

    /// Who asked: a provider webhook, the app, the nightly reconciliation, or an App Store notification.
    package enum Source: String, Codable, Sendable {
        case webhook, app, reconciliation, appstore
    }

    /// A reconciliation names neither a subscription nor a user; any other sync names at least one, and an
    /// `appstore` sync carries its `signedTransaction`.
    package struct Parameters: Codable, Sendable, Equatable {
        package var userId: String?
        package var subscriptionId: String?
        package var source: Source
        /// The provider event's creation time, unix seconds: an older event never overwrites a newer state.
        package var eventCreated: Int?
        /// `appstore`: the StoreKit 2 transaction a notification carried (a JWS, verified again by the job).
        package var signedTransaction: String?
        package var notificationType: String?

        package init(
            userId: String? = nil, subscriptionId: String? = nil, source: Source, eventCreated: Int? = nil,
            signedTransaction: String? = nil, notificationType: String? = nil
        ) {
            self.userId = userId
            self.subscriptionId = subscriptionId
            self.source = source
            self.eventCreated = eventCreated
            self.signedTransaction = signedTransaction
            self.notificationType = notificationType
        }
    }

    /// A user's subscription state after the sync, or what a reconciliation enqueued.
    package enum Result: Codable, Sendable, Equatable {
        case state(State)
        case reconciliation(Reconciliation)

        /// A reconciliation's result counts users; a state's names one.
        package init(from decoder: any Decoder) throws {
            if let reconciliation = try? Reconciliation(from: decoder) {
                self = .reconciliation(reconciliation)
            } else {
                self = .state(try State(from: decoder))
            }
        }

        package func encode(to encoder: any Encoder) throws {
            switch self {
            case .state(let state): try state.encode(to: encoder)
            case .reconciliation(let reconciliation): try reconciliation.encode(to: encoder)
            }
        }
    }

    /// `renewalDate` is `null`, never left out, when nothing renews (the free tier).
    package struct State: Codable, Sendable, Equatable {
        package var userId: String
        package var tier: String
        package var status: String
        /// RFC 3339 with fractional seconds.
        package var renewalDate: String?
        /// False when a newer state was stored already (or there was nothing at the provider to read).
        package var applied: Bool

        package init(userId: String, tier: String, status: String, renewalDate: String?, applied: Bool) {
            self.userId = userId
            self.tier = tier
            self.status = status
            self.renewalDate = renewalDate
            self.applied = applied
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(userId, forKey: .userId)
            try container.encode(tier, forKey: .tier)
            try container.encode(status, forKey: .status)
            try container.encode(renewalDate, forKey: .renewalDate)
            try container.encode(applied, forKey: .applied)
        }
    }

    package struct Reconciliation: Codable, Sendable, Equatable {
        /// Subscribed users read.
        package var users: Int
        /// Syncs enqueued for them (fewer when a re-delivered reconciliation found its syncs enqueued already).
        package var enqueued: Int

        package init(users: Int, enqueued: Int) {
            self.users = users
            self.enqueued = enqueued
        }
    }
}
