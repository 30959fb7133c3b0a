import CoreMetrics
import Foundation
import Postgres
import Prometheus
import Redis
import Synchronization

/// One process's metrics: a Prometheus registry with the swift-metrics factory over it, and the readings taken at
/// scrape time (queue state from Redis, connection counts, busy slots). Handles are made once (per queue and kind,
/// per provider, per route) and kept, so counting on a hot path is an atomic add.
public final class Telemetry: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// The factory every handle of this process is made by (the binary also bootstraps `MetricsSystem` with it).
    public let factory: PrometheusMetricsFactory
    private let collectors = Mutex<[@Sendable () async throws -> Void]>([])

    /// - Parameters:
    ///   - version: what `carbscan_build_info` reports (the deploy's `CARBSCAN_VERSION`, as the process registry does).
    public init(version: String = "dev", registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        // Jobs and calls last from milliseconds (a noop) to minutes (an AI analysis): buckets up to 5 min.
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
            .seconds(60), .seconds(300),
        ]
        self.factory = factory
        CoreMetrics.Gauge(label: MetricName.buildInfo, dimensions: [("version", version)], factory: factory).record(1)
        CoreMetrics.Gauge(label: MetricName.processStartTime, dimensions: [], factory: factory)
            .record(Self.processStartTime ?? Date().timeIntervalSince1970)
        addConnectionGauges()
    }

    /// Runs `collector` before each scrape renders (to set gauges read at scrape time). A collector that throws fails
    /// the scrape: better no answer than stale figures an autoscaler would act on.
    public func addCollector(_ collector: @escaping @Sendable () async throws -> Void) {
        collectors.withLock { $0.append(collector) }
    }

    /// The Prometheus text exposition of every metric, after the scrape-time readings.
    public func scrape() async throws -> String {
        for collector in collectors.withLock({ $0 }) { try await collector() }
        return registry.emitToString()
    }

    /// Busy slots and concurrency of a worker, read at each scrape.
    public func addWorkerGauges(concurrency: Int, busy: @escaping @Sendable () -> Int) {
        let busyGauge = CoreMetrics.Gauge(label: MetricName.workerBusySlots, dimensions: [], factory: factory)
        CoreMetrics.Gauge(label: MetricName.workerConcurrency, dimensions: [], factory: factory).record(concurrency)
        addCollector { busyGauge.record(busy()) }
    }

    private func addConnectionGauges() {
        let redisOpen = CoreMetrics.Gauge(label: MetricName.redisConnections, dimensions: [("state", "open")], factory: factory)
        let redisBusy = CoreMetrics.Gauge(label: MetricName.redisConnections, dimensions: [("state", "busy")], factory: factory)
        let redisReconnects = MirroredCounter(CoreMetrics.Counter(label: MetricName.redisReconnects, dimensions: [], factory: factory))
        let postgresOpen = CoreMetrics.Gauge(label: MetricName.postgresConnections, dimensions: [("state", "open")], factory: factory)
        let postgresBusy = CoreMetrics.Gauge(label: MetricName.postgresConnections, dimensions: [("state", "busy")], factory: factory)
        let postgresReconnects = MirroredCounter(
            CoreMetrics.Counter(label: MetricName.postgresReconnects, dimensions: [], factory: factory))
        let postgresWaits = MirroredCounter(CoreMetrics.Counter(label: MetricName.postgresPoolWaits, dimensions: [], factory: factory))
        let postgresWaitSeconds = CoreMetrics.FloatingPointCounter(
            label: MetricName.postgresPoolWaitSeconds, dimensions: [], factory: factory)
        let waitSecondsExported = Mutex(0.0)
        addCollector {
            redisOpen.record(RedisConnectionStats.open)
            redisBusy.record(RedisConnectionStats.busy)
            redisReconnects.catchUp(to: RedisConnectionStats.reconnects)
            postgresOpen.record(PostgresConnectionStats.open)
            postgresBusy.record(PostgresConnectionStats.busy)
            postgresReconnects.catchUp(to: PostgresConnectionStats.reconnects)
            postgresWaits.catchUp(to: PostgresConnectionStats.waits)
            let total = PostgresConnectionStats.waitSeconds
            let delta = waitSecondsExported.withLock { exported in
                defer { exported = max(exported, total) }
                return total - exported
            }
            if delta > 0 { postgresWaitSeconds.increment(by: delta) }
        }
    }

    /// A counter that follows a count kept elsewhere (a connection thread's atomic): raised to it at each scrape.
    private final class MirroredCounter: Sendable {
        let counter: CoreMetrics.Counter
        let exported = Mutex(0)

        init(_ counter: CoreMetrics.Counter) { self.counter = counter }

        func catchUp(to total: Int) {
            let delta = exported.withLock { exported in
                defer { exported = max(exported, total) }
                return total - exported
            }
            if delta > 0 { counter.increment(by: delta) }
        }
    }

    /// When this process started, in Unix seconds (from /proc), or nil off Linux.
    static let processStartTime: Double? = {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")"),
            let uptime = try? String(contentsOfFile: "/proc/uptime", encoding: .utf8).split(separator: " ").first.flatMap({ Double($0) })
        else { return nil }
        // Field 22 (starttime, in clock ticks since boot); fields after the command name start at field 3.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]) else { return nil }
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let bootTime = Date().timeIntervalSince1970 - uptime
        return bootTime + ticks / ticksPerSecond
    }()
}
