import Foundation
import Hummingbird
import Postgres
import Store

/// `insights` (seed 001) and `user/stats` (seed 004), computed in the user's time zone.
/// The account (tier, time zone) is read on the primary with the token check; the meals where `reads` says.
struct InsightsRoutes {
    let reads: ReadRouting
    let authenticator: Authenticator

    func register(on api: RouteTable) {
        api.get("insights", insights)
        api.get("user/stats", stats)
    }

    struct Period: Encodable {
        var totalCarbs: Double
        var mealCount: Int
        var dailyAverage: Double?
    }

    struct Highlight: Encodable {
        var name: String
        var carbs: Double
        var date: Date
    }

    struct Insights: Encodable {
        struct Summary: Encodable {
            var today: Period
            var weekly: Period
            var monthly: Period
        }
        struct Trends: Encodable {
            var direction: String
            var percentageChange: Int
            var comparison = "vs previous week"
        }
        struct Highlights: Encodable {
            @Nullable var highestCarbMeal: Highlight?
            @Nullable var lowestCarbMeal: Highlight?
        }
        var summary: Summary
        var trends: Trends
        var highlights: Highlights
        var timeZone: String
    }

    /// Day boundaries in the user's zone: today, the 7 days ending today, the 30 days ending today, and the 7
    /// days before this week (for the trend).
    func insights(_ request: Request, _ context: APIContext) async throws -> Response {
        let user = try await authenticator.caller(request).user
        let days = LocalDays(timeZone: user.calendarTimeZone, now: Date())
        let today = days.start(daysAgo: 0)
        let tomorrow = days.start(daysAgo: -1)
        let weekStart = days.start(daysAgo: 6)
        let monthStart = days.start(daysAgo: 29)
        let previousWeekStart = days.start(daysAgo: 13)
        let meals = Meals(await reads.reader(for: user.id))
        let sums = try await meals.summaries(
            userID: user.id,
            windows: [
                (today, tomorrow), (weekStart, tomorrow), (monthStart, tomorrow), (previousWeekStart, weekStart),
            ])
        let (highest, lowest) = try await meals.extremes(userID: user.id, start: weekStart, end: tomorrow)
        let thisWeek = sums[1].totalCarbs
        let previousWeek = sums[3].totalCarbs
        let change: Int =
            previousWeek > 0 ? Int(((thisWeek - previousWeek) / previousWeek * 100).rounded()) : (thisWeek > 0 ? 100 : 0)
        let direction = change > 0 ? "increasing" : change < 0 ? "decreasing" : "stable"
        func period(_ summary: MealSummary, days: Int?) -> Period {
            Period(
                totalCarbs: summary.totalCarbs.rounded(), mealCount: summary.mealCount,
                dailyAverage: days.map { (summary.totalCarbs / Double($0)).rounded() })
        }
        return try Envelope.success(
            Insights(
                summary: .init(today: period(sums[0], days: nil), weekly: period(sums[1], days: 7), monthly: period(sums[2], days: 30)),
                trends: .init(direction: direction, percentageChange: change),
                highlights: .init(
                    highestCarbMeal: highest.map { Highlight(name: $0.name, carbs: $0.carbEstimate, date: $0.createdAt) },
                    lowestCarbMeal: lowest.map { Highlight(name: $0.name, carbs: $0.carbEstimate, date: $0.createdAt) }),
                timeZone: user.timeZone))
    }

    struct Stats: Encodable {
        struct Window: Encodable {
            var mealCount: Int
            var totalCarbs: Double
            var averageCarbs: Double
        }
        var today: Window
        var thisWeek: Window
        var allTime: Window
        var timeZone: String
    }

    /// Seed 004's home-screen stats: today, this (ISO, Monday-first) week, all time.
    func stats(_ request: Request, _ context: APIContext) async throws -> Response {
        let user = try await authenticator.caller(request).user
        let days = LocalDays(timeZone: user.calendarTimeZone, now: Date())
        let sums = try await Meals(await reads.reader(for: user.id)).summaries(
            userID: user.id,
            windows: [
                (days.start(daysAgo: 0), days.start(daysAgo: -1)), (days.startOfWeek, days.start(daysAgo: -1)), (nil, nil),
            ])
        func window(_ summary: MealSummary) -> Stats.Window {
            Stats.Window(
                mealCount: summary.mealCount, totalCarbs: summary.totalCarbs.rounded(),
                averageCarbs: summary.mealCount == 0 ? 0 : (summary.totalCarbs / Double(summary.mealCount) * 10).rounded() / 10)
        }
        return try Envelope.success(
            Stats(today: window(sums[0]), thisWeek: window(sums[1]), allTime: window(sums[2]), timeZone: user.timeZone))
    }
}

/// Midnights in one time zone (DST-aware: a day may be 23 or 25 hours long).
struct LocalDays {
    let calendar: Calendar
    let today: Date

    init(timeZone: TimeZone, now: Date) {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = timeZone
        self.calendar = calendar
        today = calendar.startOfDay(for: now)
    }

    /// The midnight starting the day `daysAgo` days before today (negative: after).
    func start(daysAgo: Int) -> Date {
        calendar.date(byAdding: .day, value: -daysAgo, to: today) ?? today
    }

    var startOfWeek: Date {
        calendar.dateInterval(of: .weekOfYear, for: today)?.start ?? today
    }
}
