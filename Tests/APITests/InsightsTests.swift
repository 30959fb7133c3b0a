import Foundation
import Postgres
import Testing

/// `GET insights` (seed 001) and `GET user/stats` (seed 004, US-005), both in the user's time zone.
/// Serialized: every `TestAPI.run` opens Postgres connections of its own, and all cases at once exceed the
/// server's `max_connections` (100).
@Suite struct InsightsTests {
    static let zones = ["UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago"]

    @Test(arguments: zones)
    func insightsTotalsAveragesTrendAndHighlights(zone: String) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            try await setZone(api, account, zone)
            let days = try await LocalCalendar(zone).awayFromMidnight()
            let today = days.startOfToday
            func daysAgo(_ count: Int) -> Date { days.start(daysAgo: count) }
            let meals: [(String, Double, Date)] = [
                ("Today A", 40, today + 60),
                ("Today B", 20, today + 120),
                ("Three days ago", 50, daysAgo(3) + 12 * 3600),
                ("First day of the week", 30, daysAgo(6) + 60),
                ("Just before the week", 70, daysAgo(6) - 60),  // previous week, this month
                ("Ten days ago", 35, daysAgo(10) + 3600),  // previous week, this month
                ("Twenty days ago", 100, daysAgo(20) + 3600),  // this month only
                ("First day of the month", 10, daysAgo(29) + 60),
                ("Just before the month", 500, daysAgo(29) - 60),  // nowhere
            ]
            for (name, carbs, at) in meals { try await api.insertMeal(userID: account.id, name: name, carbs: carbs, at: at) }

            let result = try await client.call(.get, "insights", token: account.accessToken)
            #expect(result.status == 200)
            let summary = result.data["summary"]
            #expect(summary["today"]["totalCarbs"].double == 60)
            #expect(summary["today"]["mealCount"].int == 2)
            #expect(summary["weekly"]["totalCarbs"].double == 140)
            #expect(summary["weekly"]["mealCount"].int == 4)
            #expect(summary["weekly"]["dailyAverage"].double == 20)  // round(140 / 7)
            #expect(summary["monthly"]["totalCarbs"].double == 355)
            #expect(summary["monthly"]["mealCount"].int == 8)
            #expect(summary["monthly"]["dailyAverage"].double == 12)  // round(355 / 30 = 11.83)

            // This week 140 against 105 the week before: +33 %.
            #expect(result.data["trends"]["direction"].string == "increasing")
            #expect(result.data["trends"]["percentageChange"].int == 33)
            #expect(result.data["trends"]["comparison"].string == "vs previous week")

            let highest = result.data["highlights"]["highestCarbMeal"]
            #expect(highest["name"].string == "Three days ago")
            #expect(highest["carbs"].double == 50)
            #expect(highest["date"].string == iso(daysAgo(3) + 12 * 3600))
            let lowest = result.data["highlights"]["lowestCarbMeal"]
            #expect(lowest["name"].string == "Today B")
            #expect(lowest["carbs"].double == 20)
            #expect(lowest["date"].string == iso(today + 120))
        }
    }

    @Test(arguments: [
        InsightsTrendCase(thisWeek: 150, previousWeek: 200, direction: "decreasing", change: -25),
        InsightsTrendCase(thisWeek: 80, previousWeek: 80, direction: "stable", change: 0),
        InsightsTrendCase(thisWeek: 10, previousWeek: 40, direction: "decreasing", change: -75),
        InsightsTrendCase(thisWeek: 0, previousWeek: 50, direction: "decreasing", change: -100),
        InsightsTrendCase(thisWeek: 161, previousWeek: 140, direction: "increasing", change: 15),
    ])
    func trendComparesWithTheSevenDaysBefore(_ trend: InsightsTrendCase) async throws {
        let (thisWeek, previousWeek, direction, change) = (trend.thisWeek, trend.previousWeek, trend.direction, trend.change)
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let days = try await LocalCalendar("UTC").awayFromMidnight()
            if thisWeek > 0 {
                try await api.insertMeal(userID: account.id, name: "This week", carbs: thisWeek, at: days.start(daysAgo: 2) + 3600)
            }
            if previousWeek > 0 {
                try await api.insertMeal(userID: account.id, name: "Week before", carbs: previousWeek, at: days.start(daysAgo: 9) + 3600)
            }
            // Two weeks back is outside both windows.
            try await api.insertMeal(userID: account.id, name: "Long ago", carbs: 999, at: days.start(daysAgo: 14) - 3600)

            let result = try await client.call(.get, "insights", token: account.accessToken)
            #expect(result.status == 200)
            #expect(result.data["trends"]["direction"].string == direction)
            #expect(result.data["trends"]["percentageChange"].int == change)
        }
    }

    /// Meals a minute either side of the user's local midnight: only the one after it is today. In UTC the split
    /// would differ (both or neither fall on the UTC day), so this fails if "today" were computed in UTC.
    @Test(arguments: ["Pacific/Kiritimati", "Pacific/Pago_Pago"])
    func todayFollowsTheUsersTimeZone(zone: String) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            try await setZone(api, account, zone)
            let days = try await LocalCalendar(zone).awayFromMidnight()
            let midnight = days.startOfToday
            try await api.insertMeal(userID: account.id, name: "Just after midnight", carbs: 25, at: midnight + 60)
            try await api.insertMeal(userID: account.id, name: "Just before midnight", carbs: 70, at: midnight - 60)

            let insights = try await client.call(.get, "insights", token: account.accessToken)
            #expect(insights.status == 200)
            #expect(insights.data["summary"]["today"]["mealCount"].int == 1)
            #expect(insights.data["summary"]["today"]["totalCarbs"].double == 25)
            #expect(insights.data["summary"]["weekly"]["mealCount"].int == 2)
            #expect(insights.data["timeZone"].string == zone)

            let stats = try await client.call(.get, "user/stats", token: account.accessToken)
            #expect(stats.status == 200)
            #expect(stats.data["today"]["mealCount"].int == 1)
            #expect(stats.data["today"]["totalCarbs"].double == 25)
            #expect(stats.data["today"]["averageCarbs"].double == 25)
            #expect(stats.data["allTime"]["mealCount"].int == 2)
        }
    }

    @Test func emptyAccountHasZerosAndNoHighlights() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let result = try await client.call(.get, "insights", token: account.accessToken)
            #expect(result.status == 200)
            for period in ["today", "weekly", "monthly"] {
                #expect(result.data["summary"][period]["totalCarbs"].double == 0)
                #expect(result.data["summary"][period]["mealCount"].int == 0)
            }
            #expect(result.data["summary"]["weekly"]["dailyAverage"].double == 0)
            #expect(result.data["summary"]["monthly"]["dailyAverage"].double == 0)
            #expect(result.data["trends"]["direction"].string == "stable")
            #expect(result.data["trends"]["percentageChange"].int == 0)
            #expect(result.data["highlights"]["highestCarbMeal"].isNull)
            #expect(result.data["highlights"]["lowestCarbMeal"].isNull)

            let stats = try await client.call(.get, "user/stats", token: account.accessToken)
            #expect(stats.status == 200)
            for window in ["today", "thisWeek", "allTime"] {
                #expect(stats.data[window]["mealCount"].int == 0)
                #expect(stats.data[window]["totalCarbs"].double == 0)
                #expect(stats.data[window]["averageCarbs"].double == 0)
            }
        }
    }

    /// Today, this ISO week (from Monday 00:00 in the user's zone) and all time; the expected values are worked
    /// out here with a Monday-first calendar of our own.
    @Test(arguments: zones)
    func userStatsTodayThisWeekAndAllTime(zone: String) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            try await setZone(api, account, zone)
            let days = try await LocalCalendar(zone).awayFromMidnight()
            let today = days.startOfToday
            let monday = days.startOfISOWeek
            let meals: [(Double, Date)] = [
                (30, today + 60), (45, today + 120), (20, monday + 60), (60, monday - 60), (100, today - 100 * 86_400),
                (7.5, today - 86_400 + 30),
            ]
            for (carbs, at) in meals { try await api.insertMeal(userID: account.id, name: "Meal", carbs: carbs, at: at) }

            let tomorrow = days.start(daysAgo: -1)
            func expected(from start: Date?) -> (count: Int, total: Double, average: Double) {
                let carbs = meals.filter { meal in meal.1 < tomorrow && (start.map { meal.1 >= $0 } ?? true) }.map(\.0)
                let total = carbs.reduce(0, +)
                return (carbs.count, total.rounded(), carbs.isEmpty ? 0 : (total / Double(carbs.count) * 10).rounded() / 10)
            }
            let result = try await client.call(.get, "user/stats", token: account.accessToken)
            #expect(result.status == 200)
            #expect(result.data["timeZone"].string == zone)
            for (window, start) in [("today", Optional(today)), ("thisWeek", Optional(monday)), ("allTime", nil)] {
                let want = expected(from: start)
                #expect(result.data[window]["mealCount"].int == want.count, "\(window)")
                #expect(result.data[window]["totalCarbs"].double == want.total, "\(window)")
                #expect(result.data[window]["averageCarbs"].double == want.average, "\(window)")
            }
            // The values the expectations above work out to: guards the helper itself. On a Monday the meal a
            // minute after Monday's midnight is today's too.
            let isMonday = today == monday
            #expect(expected(from: today).count == (isMonday ? 3 : 2))
            #expect(expected(from: today).average == (isMonday ? 31.7 : 37.5))
            #expect(expected(from: nil).count == 6)
            #expect(expected(from: nil).total == 263)
        }
    }
}

// MARK: Helpers

struct InsightsTrendCase: Sendable, CustomTestStringConvertible {
    var thisWeek: Double
    var previousWeek: Double
    var direction: String
    var change: Int
    var testDescription: String { "\(thisWeek) vs \(previousWeek)" }
}

private func setZone(_ api: TestAPI, _ account: TestAPI.Account, _ zone: String) async throws {
    try await api.database.execute("UPDATE users SET time_zone = $2 WHERE id = $1", [account.id, zone])
}

private func iso(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
}

/// Local days in one zone, worked out independently of the server's code.
private struct LocalCalendar {
    let calendar: Calendar
    let startOfToday: Date

    init(_ zone: String, now: Date = Date()) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        self.calendar = calendar
        startOfToday = calendar.startOfDay(for: now)
    }

    func start(daysAgo: Int) -> Date { calendar.date(byAdding: .day, value: -daysAgo, to: startOfToday)! }

    /// Monday 00:00 of the current week.
    var startOfISOWeek: Date {
        let weekday = calendar.component(.weekday, from: startOfToday)  // 1 = Sunday … 7 = Saturday
        return start(daysAgo: (weekday + 5) % 7)
    }

    /// The calendar of now, taken at least a few seconds before the next local midnight, so that the test and
    /// the server see the same day.
    func awayFromMidnight() async throws -> LocalCalendar {
        let left = start(daysAgo: -1).timeIntervalSinceNow
        guard left < 15 else { return self }
        try await Task.sleep(for: .seconds(left + 1))
        return LocalCalendar(calendar.timeZone.identifier)
    }
}
