import Foundation
import Hummingbird
import Postgres
import Store

/// `subscriptions/status`: tier, scans and chats left, and the tier's limits (seed 000's table; null is unlimited
/// or not applicable).
struct SubscriptionRoutes {
    let database: PostgresClient
    let authenticator: Authenticator

    func register(on api: RouteTable) {
        api.get("subscriptions/status", status)
    }

    struct Status: Encodable {
        struct Subscription: Encodable {
            var tier: String
            var status: String
            var renewalDate: Date?
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(tier, forKey: .tier)
                try c.encode(status, forKey: .status)
                try c.encode(renewalDate, forKey: .renewalDate)
            }
            enum CodingKeys: String, CodingKey { case tier, status, renewalDate }
        }
        struct Scans: Encodable {
            var remaining: Int
            var resetDate: Date
            var limit: Int
            var resetPeriod: String
        }
        struct Chat: Encodable {
            var remaining: Int?
            var usedToday: Int
            var dailyLimit: Int?
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(remaining, forKey: .remaining)
                try c.encode(usedToday, forKey: .usedToday)
                try c.encode(dailyLimit, forKey: .dailyLimit)
            }
            enum CodingKeys: String, CodingKey { case remaining, usedToday, dailyLimit }
        }
        struct Limits: Encodable {
            var scansPerDay: Int?
            var scansPerMonth: Int?
            var chatPerDay: Int?
            var scanResetPeriod: String
            var historyDays: Int?
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(scansPerDay, forKey: .scansPerDay)
                try c.encode(scansPerMonth, forKey: .scansPerMonth)
                try c.encode(chatPerDay, forKey: .chatPerDay)
                try c.encode(scanResetPeriod, forKey: .scanResetPeriod)
                try c.encode(historyDays, forKey: .historyDays)
            }
            enum CodingKeys: String, CodingKey { case scansPerDay, scansPerMonth, chatPerDay, scanResetPeriod, historyDays }
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
        let used = try await UsageCounters(database).used(
            userID: user.id, kind: "chat", period: UsageCounters.day(of: now, in: user.calendarTimeZone))
        return try Envelope.success(Status(
            subscription: .init(tier: tier.rawValue, status: user.subscriptionStatus, renewalDate: user.subscriptionRenewalDate),
            scans: .init(remaining: remaining, resetDate: resetDate, limit: tier.scanLimit, resetPeriod: tier.scanResetPeriod.rawValue),
            chat: .init(remaining: tier.chatsPerDay.map { max(0, $0 - used) }, usedToday: used, dailyLimit: tier.chatsPerDay),
            limits: .init(
                scansPerDay: tier.scanResetPeriod == .daily ? tier.scanLimit : nil,
                scansPerMonth: tier.scanResetPeriod == .monthly ? tier.scanLimit : nil, chatPerDay: tier.chatsPerDay,
                scanResetPeriod: tier.scanResetPeriod.rawValue, historyDays: tier.historyDays)))
    }
}
