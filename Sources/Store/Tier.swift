import Foundation

/// Subscription tiers and their limits, exactly as seed 000's table: free 3 scans a day, 5 chats a day, 7 days
/// of history; essentials 90 scans a month, 20 chats a day, 30 days; pro 300 scans a month, unlimited chat
/// and history.
package enum Tier: String, Sendable, Codable, CaseIterable {
    case free, essentials, pro

    package enum ResetPeriod: String, Sendable, Codable { case daily, monthly }

    package var scanLimit: Int {
        switch self {
        case .free: 3
        case .essentials: 90
        case .pro: 300
        }
    }

    package var scanResetPeriod: ResetPeriod { self == .free ? .daily : .monthly }

    /// Chats per day in the user's time zone; nil is unlimited.
    package var chatsPerDay: Int? {
        switch self {
        case .free: 5
        case .essentials: 20
        case .pro: nil
        }
    }

    /// How far back meal history reaches; nil is unlimited.
    package var historyDays: Int? {
        switch self {
        case .free: 7
        case .essentials: 30
        case .pro: nil
        }
    }

    /// The next scan reset strictly after `date`: the next midnight (daily) or the next 1st of a month at
    /// midnight (monthly), in `timeZone` (the scan-reset schedule's zone, UTC by default).
    package func nextScanReset(after date: Date, in timeZone: TimeZone = .gmt) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let components: DateComponents =
            scanResetPeriod == .daily
            ? DateComponents(hour: 0, minute: 0, second: 0) : DateComponents(day: 1, hour: 0, minute: 0, second: 0)
        return calendar.nextDate(after: date, matching: components, matchingPolicy: .nextTime) ?? date.addingTimeInterval(86_400)
    }
}
