import Metrics
import Queue

/// The queue gauges, read from Redis at each scrape (`JobQueue.states()`: two pipelined round trips). Every process
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
        telemetry.addCollector {
            for state in try await queue.states() {
                guard let gauges = all[state.queue] else { continue }
                for (gauge, value) in zip(gauges.jobs, [state.queued, state.running, state.scheduled, state.retrying, state.dead]) {
                    gauge.record(value)
                }
                let (seconds, attoseconds) = state.latency.components
                gauges.latency.record(Double(seconds) + Double(attoseconds) / 1e18)
                // Pausing comes with the process registry; until then no queue is ever paused.
                gauges.paused.record(0)
            }
        }
    }
}
