import Foundation
import Logging
import ServiceLifecycle

extension JobQueue {
    /// Enqueues the fire of `schedule` (of `kind`) at `fireTime`, at most once however many schedulers call it.
    /// With `catchUp`, a schedule that never fired before only records the time (there is nothing to catch up).
    public func fire(kind: String, schedule: CronSchedule, at fireTime: Date, catchUp: Bool = false) async throws -> EnqueueResult {
        var options = EnqueueOptions()
        options.cron = .init(name: "\(kind):\(schedule.name)", fireTime: fireTime, catchUp: catchUp)
        return try await enqueue(kind, payload: schedule.payload, options: options)
    }
}

/// Fires the cron schedules of `jobs/*.yml`. Safe to run several: each fire time is enqueued once (the last fire
/// time per schedule is kept in Redis and only moves forward, checked and set in one script). At start it
/// catches up the latest missed fire of each schedule, once.
public final class CronScheduler: Service {
    let queue: JobQueue
    let logger: Logger
    let now: @Sendable () -> Date

    public init(queue: JobQueue, logger: Logger, now: @escaping @Sendable () -> Date = Date.init) {
        self.queue = queue
        self.logger = logger
        self.now = now
    }

    struct Entry {
        var kind: String
        var schedule: CronSchedule
    }

    var entries: [Entry] {
        queue.catalog.kinds.values.sorted { $0.name < $1.name }.flatMap { spec in
            spec.schedules.map { Entry(kind: spec.name, schedule: $0) }
        }
    }

    public func run() async throws {
        let entries = self.entries
        logger.info("scheduler started", metadata: ["schedules": "\(entries.map { "\($0.kind):\($0.schedule.name)" })"])
        guard !entries.isEmpty else {
            try? await gracefulShutdown()
            return
        }
        var checkedUpTo = now()
        for entry in entries {
            if let last = entry.schedule.expression.previous(atOrBefore: checkedUpTo, in: entry.schedule.timeZone) {
                await fire(entry, at: last, catchUp: true)
            }
        }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let nextFires = entries.compactMap { entry in
                entry.schedule.expression.next(after: checkedUpTo, in: entry.schedule.timeZone).map { (entry, $0) }
            }
            guard let soonest = nextFires.map(\.1).min() else { break }
            // Sleep in short steps so a clock change or shutdown is noticed promptly.
            let wait = min(soonest.timeIntervalSince(now()), 1)
            if wait > 0 {
                do {
                    try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1)) }
                } catch { break }
                if Task.isShuttingDownGracefully { break }
                continue
            }
            for (entry, time) in nextFires where time <= now() {
                await fire(entry, at: time, catchUp: false)
            }
            checkedUpTo = soonest
        }
        logger.info("scheduler stopped")
    }

    private func fire(_ entry: Entry, at time: Date, catchUp: Bool) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                let result = try await queue.fire(kind: entry.kind, schedule: entry.schedule, at: time, catchUp: catchUp)
                if case .enqueued(let id) = result {
                    logger.info(
                        catchUp ? "cron caught up a missed fire" : "cron fired",
                        metadata: [
                            "kind": "\(entry.kind)", "schedule": "\(entry.schedule.name)", "fire_time": "\(time)", "job": "\(id)",
                        ])
                }
                return
            } catch {
                failures += 1
                logger.error("cron fire failed, retrying", metadata: ["kind": "\(entry.kind)", "error": "\(error)"])
                try? await Task.sleep(for: retryDelay(afterFailures: failures))
            }
        }
    }
}
