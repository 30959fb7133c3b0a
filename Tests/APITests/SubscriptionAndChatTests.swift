import Foundation
import Postgres
import Store
import Testing

/// `GET subscriptions/status` (seed 001, limits of seed 000's tier table) and `GET chat/history`.
/// Serialized: every `TestAPI.run` opens Postgres connections of its own, and all cases at once exceed the
/// server's `max_connections` (100).
@Suite struct SubscriptionAndChatTests {
    // MARK: subscriptions/status

    @Test func freeTierDefaults() async throws {
        try await TestAPI.run { api, client in
            try await UTC.awayFromMidnight()
            let account = try await api.register(client)
            let result = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(result.status == 200)
            let data = result.data
            #expect(data["subscription"]["tier"].string == "free")
            #expect(data["subscription"]["status"].string == "active")
            #expect(data["subscription"]["renewalDate"].isNull)
            #expect(data["scans"]["remaining"].int == 3)
            #expect(data["scans"]["limit"].int == 3)
            #expect(data["scans"]["resetPeriod"].string == "daily")
            #expect(data["scans"]["resetDate"].string == iso(UTC.nextMidnight()))
            #expect(data["chat"]["dailyLimit"].int == 5)
            #expect(data["chat"]["usedToday"].int == 0)
            #expect(data["chat"]["remaining"].int == 5)
            #expect(data["limits"]["scansPerDay"].int == 3)
            #expect(data["limits"]["scansPerMonth"].isNull)
            #expect(data["limits"]["chatPerDay"].int == 5)
            #expect(data["limits"]["scanResetPeriod"].string == "daily")
            #expect(data["limits"]["historyDays"].int == 7)
        }
    }

    @Test(arguments: [
        PaidTierCase(tier: .essentials, remaining: 85, limit: 90, chatsPerDay: 20, historyDays: 30),
        PaidTierCase(tier: .pro, remaining: 250, limit: 300, chatsPerDay: nil, historyDays: nil),
    ])
    func paidTierLimits(_ paid: PaidTierCase) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            try await api.setTier(paid.tier, userID: account.id)
            let reset = UTC.firstOfNextMonth()
            try await api.database.execute(
                "UPDATE users SET remaining_scans = $2, scan_reset_date = $3 WHERE id = $1", [account.id, paid.remaining, reset])

            let result = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(result.status == 200)
            let data = result.data
            #expect(data["subscription"]["tier"].string == paid.tier.rawValue)
            #expect(data["scans"]["remaining"].int == paid.remaining)
            #expect(data["scans"]["limit"].int == paid.limit)
            #expect(data["scans"]["resetPeriod"].string == "monthly")
            #expect(data["scans"]["resetDate"].string == iso(reset))
            #expect(data["chat"]["usedToday"].int == 0)
            if let chats = paid.chatsPerDay {
                #expect(data["chat"]["dailyLimit"].int == chats)
                #expect(data["chat"]["remaining"].int == chats)
            } else {
                // Unlimited is null, present in the body.
                #expect(data["chat"]["dailyLimit"].isNull)
                #expect(data["chat"]["remaining"].isNull)
                #expect(data["limits"]["chatPerDay"].isNull)
            }
            #expect(data["limits"]["scansPerDay"].isNull)
            #expect(data["limits"]["scansPerMonth"].int == paid.limit)
            #expect(data["limits"]["scanResetPeriod"].string == "monthly")
            if let days = paid.historyDays {
                #expect(data["limits"]["historyDays"].int == days)
            } else {
                #expect(data["limits"]["historyDays"].isNull)
            }
        }
    }

    @Test func scansLeftInThePeriodAreTheStoredCount() async throws {
        try await TestAPI.run { api, client in
            try await UTC.awayFromMidnight()
            let account = try await api.register(client)
            try await api.database.execute("UPDATE users SET remaining_scans = 1 WHERE id = $1", [account.id])
            let result = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(result.data["scans"]["remaining"].int == 1)
            #expect(result.data["scans"]["limit"].int == 3)
            #expect(result.data["scans"]["resetDate"].string == iso(UTC.nextMidnight()))
        }
    }

    /// A reset date in the past: the reset is due, so the user has the full quota and the next reset date.
    @Test(arguments: [(Tier.free, 3), (Tier.essentials, 90), (Tier.pro, 300)])
    func pastResetDateShowsTheFullQuota(tier: Tier, quota: Int) async throws {
        try await TestAPI.run { api, client in
            try await UTC.awayFromMidnight()
            let account = try await api.register(client)
            try await api.setTier(tier, userID: account.id)
            try await api.database.execute(
                "UPDATE users SET remaining_scans = 0, scan_reset_date = $2 WHERE id = $1", [account.id, Date() - 3600])
            let result = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(result.status == 200)
            #expect(result.data["scans"]["remaining"].int == quota)
            #expect(result.data["scans"]["limit"].int == quota)
            let next = tier == .free ? UTC.nextMidnight() : UTC.firstOfNextMonth()
            #expect(result.data["scans"]["resetDate"].string == iso(next))
        }
    }

    /// Chats used today come from the counter of the user's local date; other days' counters do not count.
    @Test func chatUsageIsTodaysCounterInTheUsersZone() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let zone = "Pacific/Kiritimati"
            try await api.database.execute("UPDATE users SET time_zone = $2 WHERE id = $1", [account.id, zone])
            let local = try await LocalDay(zone).awayFromMidnight()
            let utc = try await LocalDay("UTC").awayFromMidnight()
            try await insertCounter(api, account.id, period: local.date(daysAgo: 0), used: 2)
            try await insertCounter(api, account.id, period: local.date(daysAgo: 1), used: 5)
            // UTC's today is another day's counter unless it is one of the two above (from 10:00 UTC on, Kiritimati's
            // yesterday is UTC's today).
            if ![local.date(daysAgo: 0), local.date(daysAgo: 1)].contains(utc.date(daysAgo: 0)) {
                try await insertCounter(api, account.id, period: utc.date(daysAgo: 0), used: 4)
            }
            try await api.database.execute(
                "INSERT INTO usage_counters (user_id, kind, period, used) VALUES ($1, 'scan', $2, 3)", [account.id, local.date(daysAgo: 0)])

            let result = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(result.status == 200)
            #expect(result.data["chat"]["usedToday"].int == 2)
            #expect(result.data["chat"]["remaining"].int == 3)
            #expect(result.data["chat"]["dailyLimit"].int == 5)
        }
    }

    @Test(arguments: [(Tier.free, 7), (Tier.pro, 7)])
    func chatRemainingNeverGoesBelowZero(tier: Tier, used: Int) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            try await api.setTier(tier, userID: account.id)
            let today = try await LocalDay("UTC").awayFromMidnight()
            try await insertCounter(api, account.id, period: today.date(daysAgo: 0), used: used)
            let result = try await client.call(.get, "subscriptions/status", token: account.accessToken)
            #expect(result.data["chat"]["usedToday"].int == used)
            if tier == .free {
                #expect(result.data["chat"]["remaining"].int == 0)
            } else {
                #expect(result.data["chat"]["remaining"].isNull)
            }
        }
    }

    // MARK: chat/history

    @Test func chatHistoryIsNewestFirst() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let now = Date()
            let middle = try await insertChat(api, account.id, "Carbs in rice?", "About 45 g per cup.", "carb_lookup", at: now - 7200)
            let newest = try await insertChat(api, account.id, "Is a banana OK?", "A medium banana has 27 g.", "general", at: now - 60)
            let oldest = try await insertChat(api, account.id, "Hello", "Hi!", "greeting", at: now - 3 * 86_400)

            let result = try await client.call(.get, "chat/history", token: account.accessToken)
            #expect(result.status == 200)
            #expect(result.data["count"].int == 3)
            let messages = result.data["messages"].array
            #expect(messages.compactMap { $0["id"].int } == [newest, middle, oldest])
            #expect(messages[0]["message"].string == "Is a banana OK?")
            #expect(messages[0]["response"].string == "A medium banana has 27 g.")
            #expect(messages[0]["messageType"].string == "general")
            #expect(messages[0]["createdAt"].string == iso(now - 60))
            #expect(messages[1]["messageType"].string == "carb_lookup")
        }
    }

    @Test func chatHistoryLimits() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            // "Q1" is the newest, "Q205" the oldest.
            try await api.database.execute(
                """
                INSERT INTO chat_messages (user_id, message, response, message_type, created_at)
                SELECT $1, 'Q' || g, 'A' || g, 'general', now() - g * interval '1 minute' FROM generate_series(1, 205) g
                """,
                [account.id])

            let byDefault = try await client.call(.get, "chat/history", token: account.accessToken)
            #expect(byDefault.status == 200)
            #expect(byDefault.data["count"].int == 50)
            #expect(byDefault.data["messages"].array.compactMap { $0["message"].string } == (1...50).map { "Q\($0)" })

            let two = try await client.call(.get, "chat/history?limit=2", token: account.accessToken)
            #expect(two.data["messages"].array.compactMap { $0["message"].string } == ["Q1", "Q2"])
            #expect(two.data["count"].int == 2)

            let most = try await client.call(.get, "chat/history?limit=200", token: account.accessToken)
            #expect(most.status == 200)
            #expect(most.data["count"].int == 200)
            #expect(most.data["messages"].array.last?["message"].string == "Q200")

            for bad in ["201", "0", "-5", "lots"] {
                let refused = try await client.call(.get, "chat/history?limit=\(bad)", token: account.accessToken)
                #expect(refused.status == 400, "limit=\(bad)")
                #expect(refused.errorCode == "VALIDATION_ERROR", "limit=\(bad)")
                #expect(refused.json["error"]["details"]["field"].string == "limit", "limit=\(bad)")
            }
        }
    }
}

// MARK: Helpers

struct PaidTierCase: Sendable, CustomTestStringConvertible {
    var tier: Tier
    var remaining: Int
    var limit: Int
    var chatsPerDay: Int?
    var historyDays: Int?
    var testDescription: String { tier.rawValue }
}

private func iso(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
}

private func insertCounter(_ api: TestAPI, _ userID: String, period: String, used: Int) async throws {
    try await api.database.execute(
        "INSERT INTO usage_counters (user_id, kind, period, used) VALUES ($1, 'chat', $2, $3)", [userID, period, used])
}

private func insertChat(_ api: TestAPI, _ userID: String, _ message: String, _ response: String, _ type: String, at date: Date)
    async throws -> Int
{
    let rows = try await api.database.query(
        "INSERT INTO chat_messages (user_id, message, response, message_type, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id",
        [userID, message, response, type, date])
    return Int(try rows[rows.startIndex].decode("id", as: Int64.self))
}

/// UTC dates the scan quota resets on, worked out here.
private enum UTC {
    static var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return calendar
    }

    static func nextMidnight(after now: Date = Date()) -> Date {
        calendar.date(byAdding: .day, value: 1, to: calendar.startOfDay(for: now))!
    }

    static func firstOfNextMonth(after now: Date = Date()) -> Date {
        let parts = calendar.dateComponents([.year, .month], from: now)
        let first = calendar.date(from: DateComponents(year: parts.year, month: parts.month, day: 1))!
        return calendar.date(byAdding: .month, value: 1, to: first)!
    }

    /// Waits out the last seconds before UTC midnight, so the test and the server agree on the day.
    static func awayFromMidnight() async throws {
        let left = nextMidnight().timeIntervalSinceNow
        if left < 15 { try await Task.sleep(for: .seconds(left + 1)) }
    }
}

/// Local dates ("YYYY-MM-DD") in one zone.
private struct LocalDay {
    let calendar: Calendar
    let now: Date

    init(_ zone: String, now: Date = Date()) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        self.calendar = calendar
        self.now = now
    }

    func date(daysAgo: Int) -> String {
        let day = calendar.date(byAdding: .day, value: -daysAgo, to: calendar.startOfDay(for: now))!
        let parts = calendar.dateComponents([.year, .month, .day], from: day)
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }

    func awayFromMidnight() async throws -> LocalDay {
        let next = calendar.date(byAdding: .day, value: 1, to: calendar.startOfDay(for: now))!
        let left = next.timeIntervalSinceNow
        guard left < 15 else { return self }
        try await Task.sleep(for: .seconds(left + 1))
        return LocalDay(calendar.timeZone.identifier)
    }
}
