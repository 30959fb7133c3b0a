import Durations
import Foundation
import JobContracts
import Queue
import Store

/// The `scan-reset` kind (jobs/scan-reset.yml): gives the users of one scope (`daily`: the free tier, `monthly`: the
/// paid tiers) whose period has begun their full scan quota again.
///
/// The period is the fire time's day or month in `WorkerSettings.scanResetTimeZone` (or the payload's `period`, for
/// a manual re-run), so a late run — a catch-up after downtime, a retry — still resets the period it was fired
/// for. Each user is reset at most once per period: the reset moves their `scan_reset_date` past the period's
/// start, which is the guard every later run (and `ScanQuota`) checks.
package struct ScanResetJob: JobKind {
    package typealias Contract = ScanResetContract
    package static let holdsDatabaseConnection = true

    let services: WorkerServices
    let batchSize: Int

    package init(services: WorkerServices, batchSize: Int = 5000) {
        self.services = services
        self.batchSize = batchSize
    }

    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        let zone = services.settings.scanResetTimeZone
        let scope = Tier.ResetPeriod(parameters.scope)
        let period: ScanResetPeriod
        if let text = parameters.period {
            guard let parsed = ScanResetPeriod(scope, text, in: zone) else {
                throw JobFailure.permanent("period '\(text)' is not a \(scope) period (2026-11-22 or 2026-11)")
            }
            period = parsed
        } else {
            let fireTime = context.scheduledFor ?? context.enqueuedAt
            period = ScanResetPeriod(scope, containing: fireTime, in: zone)
            if context.scheduledFor != nil && period.start != fireTime {
                // The cron's zone (jobs/scan-reset.yml) and SCAN_RESET_TIMEZONE must agree, or fires land mid-period.
                context.logger.warning(
                    "scan-reset fired off a period boundary: the schedule's time zone differs from SCAN_RESET_TIMEZONE",
                    metadata: ["fire_time": "\(fireTime)", "zone": "\(zone.identifier)", "period": "\(period.name)"])
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        var total = ScanResets.Outcome()
        for tier in Tier.allCases where tier.scanResetPeriod == scope {
            let outcome = try await ScanResets(services.database).reset(
                tier: tier, periodStart: period.start, nextReset: tier.nextScanReset(after: period.start, in: zone), batchSize: batchSize)
            total.usersReset += outcome.usersReset
            total.batches += outcome.batches
            total.longestBatch = max(total.longestBatch, outcome.longestBatch)
        }
        let elapsed = clock.now - start
        context.logger.info(
            "scan quotas reset",
            metadata: ["period": "\(period.name)", "scope": "\(scope.rawValue)", "users": "\(total.usersReset)"])
        return .init(
            period: period.name, scope: parameters.scope, usersReset: total.usersReset, batches: total.batches,
            longestBatchMs: total.longestBatch.fractionalMilliseconds, elapsedMs: elapsed.fractionalMilliseconds)
    }
}

extension Tier.ResetPeriod {
    /// The tiers a scan-reset job's scope resets are those whose quota renews in that period.
    init(_ scope: ScanResetContract.Scope) {
        switch scope {
        case .daily: self = .daily
        case .monthly: self = .monthly
        }
    }
}

/// A daily or monthly scan period in the reset zone: its name (`2026-11-22`, `2026-11`) and its first instant.
struct ScanResetPeriod: Equatable {
    var name: String
    var start: Date

    /// The period `date` falls in.
    init(_ scope: Tier.ResetPeriod, containing date: Date, in zone: TimeZone) {
        let calendar = Self.calendar(zone)
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        self.init(scope, year: parts.year!, month: parts.month!, day: parts.day!, calendar: calendar)
    }

    /// Parses a period name of `scope`'s shape; nil when it has the other shape or is no real date.
    init?(_ scope: Tier.ResetPeriod, _ name: String, in zone: TimeZone) {
        let numbers = name.split(separator: "-").map { Int($0) }
        guard numbers.count == (scope == .daily ? 3 : 2), numbers.allSatisfy({ $0 != nil }) else { return nil }
        let calendar = Self.calendar(zone)
        self.init(scope, year: numbers[0]!, month: numbers[1]!, day: scope == .daily ? numbers[2]! : 1, calendar: calendar)
        guard self.name == name else { return nil }  // 2026-02-30 would roll over into March
    }

    private init(_ scope: Tier.ResetPeriod, year: Int, month: Int, day: Int, calendar: Calendar) {
        let components = DateComponents(year: year, month: month, day: scope == .daily ? day : 1)
        start = calendar.date(from: components) ?? .distantPast
        let parts = calendar.dateComponents([.year, .month, .day], from: start)
        name =
            scope == .daily
            ? String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
            : String(format: "%04d-%02d", parts.year!, parts.month!)
    }

    private static func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }
}
