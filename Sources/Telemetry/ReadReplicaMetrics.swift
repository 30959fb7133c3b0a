import CoreMetrics
import Postgres
import Synchronization

/// The read replicas' state and the API's routed reads, read at each scrape: per replica `healthy` (0/1) and
/// `lag_seconds`, and the reads by target and reason (mirrored from the replica set's counters).
public enum ReadReplicaMetrics {
    package static func register(_ replicas: PostgresReadReplicas, on telemetry: Telemetry) {
        let factory = telemetry.factory
        let gauges = replicas.replicas.map { replica in
            (
                replica,
                healthy: CoreMetrics.Gauge(
                    label: MetricName.postgresReplicaHealthy, dimensions: [("replica", replica.name)], factory: factory),
                lag: CoreMetrics.Gauge(label: MetricName.postgresReplicaLag, dimensions: [("replica", replica.name)], factory: factory)
            )
        }
        let routes: [(PostgresReadReplicas.Target, PostgresReadReplicas.Reason)] = [
            (.replica, .fresh), (.primary, .ownWrite), (.primary, .unhealthy),
        ]
        let counters = routes.map { target, reason in
            (
                target, reason,
                CoreMetrics.Counter(
                    label: MetricName.postgresReads, dimensions: [("target", target.rawValue), ("reason", reason.rawValue)],
                    factory: factory)
            )
        }
        let exported = Mutex([Int](repeating: 0, count: counters.count))
        telemetry.addCollector {
            for (replica, healthy, lag) in gauges {
                let health = replica.currentHealth
                healthy.record(health.isHealthy ? 1 : 0)
                lag.record(health.lagSeconds ?? .nan)
            }
            let totals = counters.map { replicas.routedReads(to: $0.0, because: $0.1) }
            let deltas = exported.withLock { exported in
                defer { exported = zip(exported, totals).map { max($0, $1) } }
                return zip(totals, exported).map { $0 - $1 }
            }
            for (counter, delta) in zip(counters, deltas) where delta > 0 { counter.2.increment(by: delta) }
        }
    }
}
