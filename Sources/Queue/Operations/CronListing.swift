import Foundation

/// A cron schedule of the catalog with when it last fired (as recorded in `base..cron` by whichever scheduler fired
/// it) and when it fires next.
public struct CronStatus: Sendable, Equatable {
    public var kind: String
    public var queue: String
    public var name: String
    public var expression: String
    public var timeZone: String
    public var lastFire: Date?
    public var nextFire: Date?
}

extension JobQueue {
    /// Every cron schedule of the catalog, by kind and name, with its last fire (nil if it never fired) and next fire.
    public func cronSchedules(now: Date = Date()) async throws -> [CronStatus] {
        let entries = catalog.kinds.values.sorted { $0.name < $1.name }.flatMap { spec in spec.schedules.map { (spec, $0) } }
        let replies = try await redis.pipeline(
            entries.map { spec, schedule in ["HGET", keys(spec.queue).cron, "\(spec.name):\(schedule.name)"] })
        return zip(entries, replies).map { entry, reply in
            let (spec, schedule) = entry
            return CronStatus(
                kind: spec.name, queue: spec.queue, name: schedule.name, expression: schedule.expression.description,
                timeZone: schedule.timeZone.identifier,
                lastFire: reply.string.flatMap(Double.init).map { Date(timeIntervalSince1970: $0 / 1000) },
                nextFire: schedule.nextFire(after: now))
        }
    }
}
