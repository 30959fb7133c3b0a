import Foundation
import Hummingbird
import Postgres
import Store

/// `subscriptions/status`: tier, scans and chats left, and the tier's limits (seed 000's table; null is unlimited
/// or not applicable).
/// The account (tier, scans left) is read on the primary with the token check; the day's chat count where `reads` says.
struct SubscriptionRoutes {
    let reads: ReadRouting
    let authenticator: Authenticator

    func register(on api: RouteTable) {
        api.get("subscriptions/status", status)
    }

    struct Status: Encodable {
        struct Subscription: Encodable {
            var tier: String
            var status: String
            @Nullable var renewalDate: Date?
        }
        struct Scans: Encodable {
            var remaining: Int
            var resetDate: Date
            var limit: Int
            var resetPeriod: String
        }
        struct Chat: Encodable {
            @Nullable var remaining: Int?
            var usedToday: Int
            @Nullable var dailyLimit: Int?
        }
        struct Limits: Encodable {
            @Nullable var scansPerDay: Int?
            @Nullable var scansPerMonth: Int?
            @Nullable var chatPerDay: Int?
            var scanResetPeriod: String
            @Nullable var historyDays: Int?
        }
        var subscription: Subscription
        var scans: Scans
        var chat: Chat
        var limits: Limits
    }

    func status(_ request: Request, _ context: APIContext) async throws -> Response {
        let user = try await authenticator.caller(request).user
        let tier = user.tier
        let now = Date()
        // A reset date in the past means the reset is due: the user has the full quota until it runs.
        let due = user.scanResetDate <= now
        let remaining = due ? tier.scanLimit : min(user.remainingScans, tier.scanLimit)
        let resetDate = due ? tier.nextScanReset(after: now) : user.scanResetDate
        let used = try await UsageCounters(await reads.reader(for: user.id)).used(
            userID: user.id, kind: "chat", period: UsageCounters.day(of: now, in: user.calendarTimeZone))
        return try Envelope.success(
            Status(
                subscription: .init(tier: tier.rawValue, status: user.subscriptionStatus, renewalDate: user.subscriptionRenewalDate),
                scans: .init(remaining: remaining, resetDate: resetDate, limit: tier.scanLimit, resetPeriod: tier.scanResetPeriod.rawValue),
                chat: .init(remaining: tier.chatsPerDay.map { max(0, $0 - used) }, usedToday: used, dailyLimit: tier.chatsPerDay),
                limits: .init(
                    scansPerDay: tier.scanResetPeriod == .daily ? tier.scanLimit : nil,
                    scansPerMonth: tier.scanResetPeriod == .monthly ? tier.scanLimit : nil, chatPerDay: tier.chatsPerDay,
                    scanResetPeriod: tier.scanResetPeriod.rawValue, historyDays: tier.historyDays)))
    }
}
