import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct PostgresLSNTests {
    @Test func parsesAndFormatsPostgresText() {
        #expect(PostgresLSN.parse("16/B374D848") == 0x16_B374_D848)
        #expect(PostgresLSN.parse("0/0") == 0)
        #expect(PostgresLSN.parse("FFFFFFFF/FFFFFFFF") == .max)
        #expect(PostgresLSN.format(0x16_B374_D848) == "16/B374D848")
        #expect(PostgresLSN.parse(PostgresLSN.format(0x1_0000_0001)) == 0x1_0000_0001)
        // Positions compare as numbers, not as text ("9/0" < "10/0").
        #expect(PostgresLSN.parse("9/0")! < PostgresLSN.parse("10/0")!)
    }

    @Test(arguments: ["", "16", "16/", "/B374D848", "16/B374D848/1", "G/0", "123456789/0", "0/123456789", " 1/2"])
    func refusesWhatIsNotAnLSN(_ text: String) {
        #expect(PostgresLSN.parse(text) == nil)
    }
}

/// A replica set on the real streaming replica of `ops/replica.sh` (replaying 2 s behind the primary).
@Suite(.enabled(if: TestServices.replicaURL != nil, "needs ops/replica.sh's replica (CARBSCAN_REPLICA_URL)"))
struct PostgresReadReplicasTests {
    static func replicaConfiguration(port: Int? = nil) throws -> PostgresConfiguration {
        var configuration = try PostgresConfiguration(url: TestServices.replicaURL ?? "")
        configuration.database = "carbscan_test"
        if let port { configuration.port = port }
        return configuration
    }

    /// Runs `body` with a replica set of `replicas` over a primary of two connections, then closes both.
    static func withReplicas<T>(
        _ replicas: [PostgresConfiguration], options: PostgresReadReplicas.Options = .init(),
        _ body: (PostgresReadReplicas) async throws -> T
    ) async throws -> T {
        let primary = PostgresClient(configuration: try TestDatabase.configuration(), logger: TestDatabase.logger)
        let set = PostgresReadReplicas(primary: primary, replicas: replicas, options: options, logger: TestDatabase.logger)
        defer {
            set.shutdown()
            primary.shutdown()
        }
        return try await body(set)
    }

    static func inRecovery(_ reader: any PostgresQueryable) async throws -> Bool {
        try await reader.query("SELECT pg_is_in_recovery() AS r")[0].decode("r")
    }

    static func onPrimary(_ reader: any PostgresQueryable) async throws -> Bool {
        try await !inRecovery(reader)
    }

    /// Waits until the replica has replayed the primary's position now, and its check says so.
    static func caughtUp(_ set: PostgresReadReplicas) async throws {
        let target = try await set.primaryLSN()
        let replayed = try await eventually(timeout: .seconds(30)) {
            await set.checkNow()
            return set.replicas[0].currentHealth.replayed >= target && set.replicas[0].currentHealth.isHealthy
        }
        #expect(replayed, "the replica did not replay \(PostgresLSN.format(target)) in 30 s: \(set.replicas[0].currentHealth)")
    }

    @Test func aFreshReplicaIsRead() async throws {
        try await Self.withReplicas([try Self.replicaConfiguration()]) { set in
            try await Self.caughtUp(set)
            let before = set.routedReads(to: .replica, because: .fresh)
            #expect(try await Self.inRecovery(set.reader(after: nil)))
            #expect(try await Self.inRecovery(set.reader(after: set.replicas[0].currentHealth.replayed)))
            #expect(set.routedReads(to: .replica, because: .fresh) == before + 2)
            #expect(set.replicas[0].currentHealth.lagSeconds.map { $0 < 10 } == true)
        }
    }

    /// A reader that needs a position the replica has not replayed (its own write, 2 s ago at most) reads the primary.
    @Test func aPositionNotReplayedYetIsReadFromThePrimary() async throws {
        try await Self.withReplicas([try Self.replicaConfiguration()]) { set in
            try await Self.caughtUp(set)
            try await set.primary.execute("SELECT txid_current()")
            let written = try await set.primaryLSN()
            await set.checkNow()
            #expect(set.replicas[0].currentHealth.replayed < written)
            let before = set.routedReads(to: .primary, because: .ownWrite)
            #expect(try await Self.onPrimary(set.reader(after: written)))
            #expect(set.routedReads(to: .primary, because: .ownWrite) == before + 1)
        }
    }

    @Test func aReplicaWhereNothingListensIsSkipped() async throws {
        let nowhere = try Self.replicaConfiguration(port: PrivateRedis.freeLoopbackPort())
        try await Self.withReplicas([nowhere]) { set async throws in
            await set.checkNow()
            guard case .down = set.replicas[0].currentHealth.state else {
                Issue.record("a replica nobody listens for is \(set.replicas[0].currentHealth.state)")
                return
            }
            let before = set.routedReads(to: .primary, because: .unhealthy)
            #expect(try await Self.onPrimary(set.reader(after: nil)))
            #expect(set.routedReads(to: .primary, because: .unhealthy) == before + 1)
        }
    }

    /// A replica that goes away between two checks: the statement given to it runs on the primary, without an error,
    /// and the replica is down from then on.
    @Test func aReplicaLostMidwayFailsOverToThePrimary() async throws {
        let replica = try Self.replicaConfiguration()
        let proxy = try await FaultProxy.start(to: replica.host, port: replica.port)
        defer { proxy.stop() }
        var proxied = replica
        proxied.port = proxy.port
        try await Self.withReplicas([proxied]) { set in
            try await Self.caughtUp(set)
            let reader = set.reader(after: nil)
            #expect(try await Self.inRecovery(reader))
            proxy.cut()
            #expect(try await Self.onPrimary(reader))
            guard case .down = set.replicas[0].currentHealth.state else {
                Issue.record("a replica that failed a statement is \(set.replicas[0].currentHealth.state)")
                return
            }
            #expect(try await Self.onPrimary(set.reader(after: nil)))
        }
    }

    /// With a bound of 0.5 s, a replica replaying 2 s behind a write is too far behind and not read.
    @Test func aReplicaPastTheLagBoundIsSkipped() async throws {
        try await Self.withReplicas([try Self.replicaConfiguration()], options: .init(maxLag: .milliseconds(500))) { set in
            // A write, then a check 1 s later while the replica holds it back 2 s. On a loaded machine the check may
            // come after the replay: then again, three times at most.
            var health = set.replicas[0].currentHealth
            var written: UInt64 = 0
            for _ in 0..<3 {
                await set.checkNow()
                try await set.primary.execute("SELECT txid_current()")
                written = try await set.primaryLSN()
                try await Task.sleep(for: .seconds(1))
                await set.checkNow()
                health = set.replicas[0].currentHealth
                if health.replayed < written { break }
            }
            #expect(health.replayed < written, "the replica replayed a write within 1 s, three times: no lag to see")
            #expect(health.state == .behind, "\(health)")
            #expect(health.lagSeconds.map { $0 > 0.5 } == true, "\(health)")
            let before = set.routedReads(to: .primary, because: .unhealthy)
            #expect(try await Self.onPrimary(set.reader(after: nil)))
            #expect(set.routedReads(to: .primary, because: .unhealthy) == before + 1)
        }
    }
}
