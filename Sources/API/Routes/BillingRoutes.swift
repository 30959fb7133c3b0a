import Foundation
import Hummingbird
import Postgres
import Queue

/// `webhooks/stripe` (signed provider events) and `subscriptions/sync` (the app asks): `subscription-sync` jobs.
/// (Being written in issue 4: no routes registered yet.)
struct BillingRoutes {
    let database: PostgresClient
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator
    /// `STRIPE_WEBHOOK_SECRET`; nil: the webhook answers CONFIGURATION_ERROR.
    let webhookSecret: String?

    func register(on api: RouteTable) {}
}
