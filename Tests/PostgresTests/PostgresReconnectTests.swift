import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct PostgresReconnectTests {
    /// Kills every backend of the client (as a server restart would). At most the calls that hit a dead connection
    /// fail, with `.connection`; the connections come back on their own.
    @Test(.timeLimit(.minutes(1)))
    func reconnectsAfterItsBackendsAreTerminated() async throws {
        try await TestDatabase.withSchema(poolSize: 2) { db, schema in
            let before = try await Self.concurrentPIDs(db, count: 2).map { try $0.get() }
            #expect(Set(before).count == 2)
            try await TestDatabase.withAdmin { admin in
                let killed = try await admin.query(
                    "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = $1", [schema.name])
                #expect(killed.count == 2)
                try await Self.waitUntilGone(admin, applicationName: schema.name)
            }
            var failures = 0
            var after: Set<Int> = []
            for _ in 0..<3 {
                for outcome in try await Self.concurrentPIDs(db, count: 2) {
                    switch outcome {
                    case .success(let pid): after.insert(pid)
                    case .failure(let error):
                        #expect(error.code == .connection, "\(error)")
                        failures += 1
                    }
                }
            }
            #expect(failures <= 2)
            #expect(!after.isEmpty)
            #expect(after.isDisjoint(with: before))
            #expect(try await db.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
        }
    }

    /// A backend killed mid-statement fails that call with `.connection`; the next call gets a new connection.
    @Test(.timeLimit(.minutes(1)))
    func aStatementWhoseBackendDiesFailsWithConnectionAndTheNextWorks() async throws {
        try await TestDatabase.withSchema(poolSize: 1) { db, schema in
            let sleeper = Task { try await db.query("SELECT pg_sleep(20)") }
            try await TestDatabase.withAdmin { admin in
                var killed = 0
                while killed == 0 {
                    try await Task.sleep(for: .milliseconds(20))
                    killed = try await admin.query(
                        """
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE application_name = $1 AND state = 'active' AND query LIKE '%pg_sleep(20)%'
                        """, [schema.name]
                    ).count
                }
            }
            await #expect {
                try await sleeper.value
            } throws: { error in
                (error as? PostgresError)?.code == .connection
            }
            #expect(try await db.query("SELECT 5 AS n")[0].decode("n", as: Int.self) == 5)
        }
    }

    /// Without pinning the transaction to its connection, the second insert would run (and commit) on a fresh one.
    @Test(.timeLimit(.minutes(1)))
    func aConnectionBrokenInsideATransactionFailsItWithoutLeakingStatements() async throws {
        try await TestDatabase.withSchema(poolSize: 1) { db, schema in
            try await db.executeScript("CREATE TABLE t (x int)")
            var afterBreak: PostgresError?
            await #expect {
                try await db.transaction { tx in
                    try await tx.execute("INSERT INTO t VALUES ($1)", [1])
                    let pid: Int = try await tx.query("SELECT pg_backend_pid() AS pid")[0].decode("pid")
                    try await TestDatabase.withAdmin { admin in
                        try await admin.execute("SELECT pg_terminate_backend($1::int)", [pid])
                        try await Self.waitUntilGone(admin, applicationName: schema.name)
                    }
                    do {
                        try await tx.execute("INSERT INTO t VALUES ($1)", [2])
                    } catch let error as PostgresError {
                        afterBreak = error
                    }
                    try await tx.execute("INSERT INTO t VALUES ($1)", [3])
                }
            } throws: { error in
                (error as? PostgresError)?.code == .connection
            }
            #expect(afterBreak?.code == .connection)
            #expect(try await db.query("SELECT count(*) AS n FROM t")[0].decode("n", as: Int.self) == 0)
        }
    }

    @Test func connectionRefusedFailsWithinTheConnectTimeout() async throws {
        var configuration = try TestDatabase.configuration(poolSize: 1)
        configuration.port = 1
        configuration.connectTimeout = .seconds(2)
        let db = PostgresClient(configuration: configuration, logger: TestDatabase.logger)
        defer { db.shutdown() }
        let clock = ContinuousClock()
        let elapsed = await clock.measure {
            await #expect {
                try await db.query("SELECT 1")
            } throws: { error in
                (error as? PostgresError)?.code == .connection && "\(error)".contains("127.0.0.1:1")
            }
        }
        #expect(elapsed < .seconds(5))
    }

    /// The server accepts TCP but never answers; libpq alone would wait forever here (or 2 s at least).
    @Test func theConnectTimeoutIsHonoured() async throws {
        let listener = try SilentListener()
        var configuration = try TestDatabase.configuration(poolSize: 1)
        configuration.port = listener.port
        configuration.connectTimeout = .milliseconds(300)
        let db = PostgresClient(configuration: configuration, logger: TestDatabase.logger)
        defer { db.shutdown() }
        let elapsed = await ContinuousClock().measure {
            await #expect {
                try await db.query("SELECT 1")
            } throws: { error in
                (error as? PostgresError)?.code == .connection && (error as? PostgresError)?.message.contains("timed out") == true
            }
        }
        #expect(elapsed >= .milliseconds(300))
        // Without the wrapper's own timer libpq would wait for ever here; the bound is generous for a loaded CI (5 s
        // was once exceeded by 0.1 s).
        #expect(elapsed < .seconds(20))
    }

    /// Within the backoff window calls fail fast with the last error instead of hammering the server.
    @Test func failedConnectsBackOff() async throws {
        let logs = CapturedLogs()
        var configuration = try TestDatabase.configuration(poolSize: 1)
        configuration.port = 1
        // A window long enough that three quick calls land in it even on a loaded machine.
        configuration.reconnectBase = .seconds(4)
        let db = PostgresClient(configuration: configuration, logger: logs.logger(level: .warning))
        defer { db.shutdown() }
        for _ in 0..<3 {
            await #expect(throws: PostgresError.self) { try await db.query("SELECT 1") }
        }
        #expect(logs.all.filter { $0.contains("unreachable") }.count == 1)
        try await Task.sleep(for: .milliseconds(4200))
        await #expect(throws: PostgresError.self) { try await db.query("SELECT 1") }
        // The next try after the window fails too, quietly: one line per outage, not per try.
        #expect(logs.all.filter { $0.contains("unreachable") }.count == 1)
    }

    @Test func passwordsAreNeverLoggedNorInErrors() async throws {
        let logs = CapturedLogs()
        var refused = try TestDatabase.configuration(poolSize: 1)
        refused.password = "hunter2-secret"
        refused.port = 1
        let failing = PostgresClient(configuration: refused, logger: logs.logger())
        defer { failing.shutdown() }
        await #expect {
            try await failing.query("SELECT 1")
        } throws: { error in
            !"\(error)".contains("hunter2-secret")
        }
        // The test server trusts local connections, so the password is sent and ignored.
        var working = try TestDatabase.configuration(poolSize: 1)
        working.password = "hunter2-secret"
        let connected = PostgresClient(configuration: working, logger: logs.logger())
        defer { connected.shutdown() }
        #expect(try await connected.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
        #expect(logs.all.contains { $0.contains("unreachable") })
        #expect(logs.all.contains { $0.contains("connected") })
        #expect(!logs.all.contains { $0.contains("hunter2-secret") })
    }

    private static func concurrentPIDs(_ db: PostgresClient, count: Int) async throws -> [Result<Int, PostgresError>] {
        await withTaskGroup(of: Result<Int, PostgresError>.self) { group in
            for _ in 0..<count {
                group.addTask {
                    do {
                        return .success(try await db.query("SELECT pg_backend_pid() AS pid, pg_sleep(0.1)")[0].decode("pid"))
                    } catch let error as PostgresError {
                        return .failure(error)
                    } catch {
                        return .failure(PostgresError(.protocolError, "unexpected \(error)"))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    private static func waitUntilGone(_ admin: PostgresClient, applicationName: String) async throws {
        while try await admin.query(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1", [applicationName])[0].decode("n", as: Int.self) > 0
        {
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
