import Foundation
import JSON

/// A named cron entry of a job kind: at each fire time the scheduler enqueues one job of the kind with
/// `payload`.
public struct CronSchedule: Sendable, Equatable {
    /// Unique within the kind (`[a-z0-9_-]+`); part of the per-fire-time key that makes a fire
    /// enqueue once however many schedulers run.
    public var name: String
    public var expression: CronExpression
    /// The zone the expression's wall-clock fields are read in; UTC unless the file names an IANA zone.
    public var timeZone: TimeZone
    /// The payload of every job this schedule enqueues; checked against the kind's schema at load.
    public var payload: JSONValue

    public init(name: String, expression: CronExpression, timeZone: TimeZone = utc, payload: JSONValue = .object([:])) {
        self.name = name
        self.expression = expression
        self.timeZone = timeZone
        self.payload = payload
    }

    /// The UTC time zone (`TimeZone.gmt` is not available on every platform this builds on).
    public static let utc: TimeZone = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? .current

    /// The first fire time strictly after `date`.
    public func nextFire(after date: Date) -> Date? { expression.next(after: date, in: timeZone) }

    /// The latest fire time at or before `date`.
    public func previousFire(atOrBefore date: Date) -> Date? { expression.previous(atOrBefore: date, in: timeZone) }
}
