import Foundation
import Postgres
import TestSupport
import Testing

@testable import Telemetry

/// The read replicas' gauges and the routed-read counter, on a replica set whose one replica nobody listens for.
@Suite struct ReadReplicaMetricsTests {
    @Test func aDownReplicaReadsZeroAndItsReadsCountAsThePrimarysWithoutTheirPassword() async throws {
        let primary = PostgresClient(configuration: try PostgresConfiguration(url: TestServices.databaseURL))
        defer { primary.shutdown() }
        let port = PrivateRedis.freeLoopbackPort()
        let replicas = PostgresReadReplicas(
            primary: primary, replicas: [try PostgresConfiguration(url: "postgres://reader:hunter2@127.0.0.1:\(port)/carbscan")],
            logger: .init(label: "test"))
        defer { replicas.shutdown() }
        let telemetry = Telemetry()
        ReadReplicaMetrics.register(replicas, on: telemetry)
        await replicas.checkNow()
        _ = try await replicas.reader(after: nil).query("SELECT 1")
        _ = try await replicas.reader(after: 42).query("SELECT 1")
        let scrape = Scrape(text: try await telemetry.scrape())
        let replica = [("replica", "127.0.0.1:\(port)/carbscan")]
        #expect(scrape.value("carbscan_postgres_replica_healthy", replica) == 0, "\(scrape.text)")
        #expect(scrape.value("carbscan_postgres_replica_lag_seconds", replica)?.isNaN == true, "\(scrape.text)")
        #expect(scrape.value("carbscan_postgres_reads_total", [("target", "primary"), ("reason", "unhealthy")]) == 2, "\(scrape.text)")
        #expect(scrape.value("carbscan_postgres_reads_total", [("target", "replica"), ("reason", "fresh")]) == 0, "\(scrape.text)")
        #expect(!scrape.text.contains("hunter2"))
        // Mirrored, not re-added: a second scrape counts what happened since.
        _ = try await replicas.reader(after: nil).query("SELECT 1")
        let again = Scrape(text: try await telemetry.scrape())
        #expect(again.value("carbscan_postgres_reads_total", [("target", "primary"), ("reason", "unhealthy")]) == 3)
    }
}
