import Foundation
import Postgres
import Redis
import TestSupport
import Testing

@testable import Telemetry

/// The Redis and Postgres connection gauges and reconnect counters. The counts are the process's, shared with the
/// tests running beside these, so they check rises, not exact values.
@Suite struct ConnectionMetricsTests {
    @Test func aRedisConnectionDroppedByTheServerCountsAReconnect() async throws {
        var configuration = try RedisConfiguration(url: TestServices.redisURL)
        configuration.poolSize = 1
        let redis = RedisClient(configuration: configuration)
        defer { redis.close() }
        let admin = try RedisClient(url: TestServices.redisURL)
        defer { admin.close() }
        let id = try #require(try await redis.send("CLIENT", "ID").int)
        #expect(RedisConnectionStats.open >= 1)
        let before = RedisConnectionStats.reconnects
        try await admin.send("CLIENT", "KILL", "ID", String(id))
        var answered = false
        for _ in 0..<20 where !answered {
            if (try? await redis.send("PING")) == .status("PONG") { answered = true } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(answered)
        #expect(RedisConnectionStats.reconnects > before)
        let scrape = Scrape(text: try await Telemetry().scrape())
        #expect((scrape.value("carbscan_redis_reconnects_total") ?? 0) >= 1, "\(scrape.text)")
    }

    @Test func aPostgresBackendTerminatedCountsAReconnectAndLentConnectionsAreBusy() async throws {
        var configuration = try PostgresConfiguration(url: TestServices.databaseURL)
        configuration.poolSize = 1
        let database = PostgresClient(configuration: configuration)
        defer { database.shutdown() }
        let admin = PostgresClient(configuration: try PostgresConfiguration(url: TestServices.databaseURL))
        defer { admin.shutdown() }
        let pid: Int = try await database.query("SELECT pg_backend_pid() AS pid")[0].decode("pid")
        #expect(PostgresConnectionStats.open >= 1)
        let before = PostgresConnectionStats.reconnects
        try await admin.execute("SELECT pg_terminate_backend($1::int)", [pid])
        var answered = false
        for _ in 0..<30 where !answered {
            if (try? await database.query("SELECT 1 AS n")) != nil {
                answered = true
            } else {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        #expect(answered)
        #expect(PostgresConnectionStats.reconnects > before)
        // Inside a transaction the connection is lent: busy.
        try await database.transaction { _ in #expect(PostgresConnectionStats.busy >= 1) }
        let scrape = Scrape(text: try await Telemetry().scrape())
        #expect((scrape.value("carbscan_postgres_reconnects_total") ?? 0) >= 1, "\(scrape.text)")
        #expect((scrape.value("carbscan_postgres_connections", [("state", "open")]) ?? 0) >= 1)
    }

    @Test func callersQueuedForAnExhaustedPoolAreCountedWithTheirWait() async throws {
        var configuration = try PostgresConfiguration(url: TestServices.databaseURL)
        configuration.poolSize = 1
        let database = PostgresClient(configuration: configuration)
        defer { database.shutdown() }
        // Four callers on one connection: three of them queue, each for at least one 50 ms statement.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { try await database.execute("SELECT pg_sleep(0.05)") } }
            try await group.waitForAll()
        }
        let scrape = Scrape(text: try await Telemetry().scrape())
        #expect((scrape.value("carbscan_postgres_pool_waits_total") ?? 0) >= 3, "\(scrape.text)")
        #expect((scrape.value("carbscan_postgres_pool_wait_seconds_total") ?? 0) >= 0.15, "\(scrape.text)")
    }
}
