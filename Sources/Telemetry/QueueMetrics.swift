import Metrics
import Queue

/// The queue gauges and the live workers, read from Redis at each scrape (`JobQueue.states()`: two pipelined round
/// trips; the paused set and the registry: two more). Every process
/// that serves `/metrics` exports them, so dashboards aggregate with `max by (queue)`.
public enum QueueMetrics {
    /// The states `carbscan_queue_jobs` reports, in the order its handles are made.
    static let states = ["queued", "running", "scheduled", "retrying", "dead"]

    /// Registers the gauges of every queue of `queue`'s catalog and reads them before each scrape.
    public static func register(_ queue: JobQueue, on telemetry: Telemetry) {
        struct Handles {
            var jobs: [Gauge]
            var latency: Gauge
            var paused: Gauge
        }
        var handles: [String: Handles] = [:]
        for name in queue.catalog.queues {
            handles[name] = Handles(
                jobs: states.map {
                    Gauge(label: MetricName.queueJobs, dimensions: [("queue", name), ("state", $0)], factory: telemetry.factory)
                },
                latency: Gauge(label: MetricName.queueLatency, dimensions: [("queue", name)], factory: telemetry.factory),
                paused: Gauge(label: MetricName.queuePaused, dimensions: [("queue", name)], factory: telemetry.factory))
        }
        let all = handles
        // Queues with a limit across processes: the limit, and the permits held against it (two round trips each).
        let limited = queue.catalog.globalLimits.sorted { $0.key < $1.key }.map { name, limit in
            (
                name: name, limit: limit,
                held: Gauge(label: MetricName.queuePermitsHeld, dimensions: [("queue", name)], factory: telemetry.factory),
                gauge: Gauge(label: MetricName.queueGlobalLimit, dimensions: [("queue", name)], factory: telemetry.factory)
            )
        }
        let workersAlive = Gauge(label: MetricName.workersAlive, dimensions: [], factory: telemetry.factory)
        let control = QueueControl(queue: queue)
        let registry = ProcessRegistry(queue: queue)
        telemetry.addCollector {
            let paused = try await control.pausedQueues()
            workersAlive.record(try await registry.processes().filter { $0.kind == .worker }.count)
            for state in try await queue.states() {
                guard let gauges = all[state.queue] else { continue }
                for (gauge, value) in zip(gauges.jobs, [state.queued, state.running, state.scheduled, state.retrying, state.dead]) {
                    gauge.record(value)
                }
                let (seconds, attoseconds) = state.latency.components
                gauges.latency.record(Double(seconds) + Double(attoseconds) / 1e18)
                gauges.paused.record(paused.contains(state.queue) ? 1 : 0)
            }
            for queueLimit in limited {
                queueLimit.gauge.record(queueLimit.limit)
                queueLimit.held.record(try await queue.permitsHeld(queue: queueLimit.name))
            }
        }
    }
}
