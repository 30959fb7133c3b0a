import Foundation
import Postgres
import TestSupport
import Testing

/// The client through a real PgBouncer 1.18 in transaction pooling (`ops/pgbouncer.sh`, pool of 10 server
/// connections): statements of one client connection land on different server connections, and a server connection
/// serves many clients in turn.
@Suite struct PoolerTests {
    /// The pooler's URL, on the test database.
    static func configuration(poolSize: Int, statementTimeout: Duration? = .seconds(30)) throws -> PostgresConfiguration {
        var components = URLComponents(string: TestServices.pgbouncerURL)!
        components.path = "/carbscan_test"
        var configuration = try PostgresConfiguration(url: components.string!)
        #expect(configuration.pooler == .transaction)
        configuration.poolSize = poolSize
        configuration.statementTimeout = statementTimeout
        configuration.applicationName = TestDatabase.uniqueName("pooled")
        return configuration
    }

    /// A table in the test database's public schema (a pooled client has no schema of its own), dropped afterwards.
    static func withTable(_ body: (String) async throws -> Void) async throws {
        let table = TestDatabase.uniqueName("pooled")
        try await TestDatabase.withAdmin { admin in
            try await admin.executeScript("CREATE TABLE public.\(table) (id int PRIMARY KEY, note text, at timestamptz)")
            do {
                try await body(table)
            } catch {
                try? await admin.executeScript("DROP TABLE public.\(table)")
                throw error
            }
            try await admin.executeScript("DROP TABLE public.\(table)")
        }
    }

    @Test func manyClientConnectionsShareTheServersWithoutPreparedStatements() async throws {
        // 16 client connections on 10 server connections, 40 distinct statements: a statement prepared on one server
        // connection would be run on another ("prepared statement … does not exist") within the first few dozen calls.
        let db = PostgresClient(configuration: try Self.configuration(poolSize: 16), logger: TestDatabase.logger)
        defer { db.shutdown() }
        try await Self.withTable { table in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for call in 0..<400 {
                    group.addTask {
                        let variant = call % 40
                        let sql = "SELECT $1::int + \(variant) AS n, $2::text AS t"
                        let row = try await db.query(sql, [call, "call \(call)"])[0]
                        #expect(try row.decode("n", as: Int.self) == call + variant)
                        #expect(try row.decode("t", as: String.self) == "call \(call)")
                    }
                }
                for id in 0..<60 {
                    group.addTask {
                        try await db.transaction { transaction in
                            try await transaction.execute("INSERT INTO \(table) (id, note) VALUES ($1, $2)", [id, "first"])
                            try await transaction.execute("UPDATE \(table) SET note = $2 WHERE id = $1", [id, "second"])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let rows = try await db.query("SELECT count(*) AS n FROM \(table) WHERE note = 'second'")
            #expect(try rows[0].decode("n", as: Int.self) == 60)
        }
    }

    @Test func timeZoneAndDateStyleReachEveryServerConnection() async throws {
        let db = PostgresClient(configuration: try Self.configuration(poolSize: 4), logger: TestDatabase.logger)
        defer { db.shutdown() }
        for _ in 0..<20 {
            // `UTC` as this client sent it (the server's own default here is `Etc/UTC`, a direct connection's `UTC`
            // comes from `options`, which the pooler refuses).
            #expect(try await db.query("SHOW TimeZone")[0].decode(0, as: String.self) == "UTC")
            #expect(try await db.query("SHOW DateStyle")[0].decode(0, as: String.self).hasPrefix("ISO"))
        }
        let date = Date(timeIntervalSince1970: 1_764_547_200.123456)  // 2025-12-01 00:00:00.123456 UTC
        try await Self.withTable { table in
            try await db.execute("INSERT INTO \(table) (id, at) VALUES (1, $1)", [date])
            let row = try await db.query("SELECT at, at::date::text AS day FROM \(table)")[0]
            #expect(try row.decode("at", as: Date.self) == date)
            #expect(try row.decode("day", as: String.self) == "2025-12-01")
        }
    }

    @Test func theStatementTimeoutHoldsInTransactionsAndStaysThere() async throws {
        let db = PostgresClient(
            configuration: try Self.configuration(poolSize: 1, statementTimeout: .milliseconds(200)), logger: TestDatabase.logger)
        defer { db.shutdown() }
        await #expect {
            try await db.transaction { transaction in try await transaction.query("SELECT pg_sleep(3)") }
        } throws: { error in
            (error as? PostgresError)?.code == .timeout
        }
        // SET LOCAL ended with its transaction: the server connection, which other clients share, keeps the default.
        for _ in 0..<10 {
            #expect(try await db.query("SHOW statement_timeout")[0].decode(0, as: String.self) == "0")
        }
        let inside = try await db.transaction { transaction in
            try await transaction.query("SHOW statement_timeout")[0].decode(0, as: String.self)
        }
        #expect(inside == "200ms")
    }

    @Test func aSearchPathIsRefusedRatherThanLost() async throws {
        var configuration = try Self.configuration(poolSize: 1)
        configuration.searchPath = "elsewhere"
        let db = PostgresClient(configuration: configuration, logger: TestDatabase.logger)
        defer { db.shutdown() }
        await #expect {
            try await db.query("SELECT 1")
        } throws: { error in
            (error as? PostgresError)?.message.contains("search_path") == true
        }
    }

    @Test func migrationsRefuseThePoolerAndNameTheDirectURL() async throws {
        let db = PostgresClient(configuration: try Self.configuration(poolSize: 1), logger: TestDatabase.logger)
        defer { db.shutdown() }
        let migrator = Migrator(client: db, migrations: [], logger: TestDatabase.logger)
        await #expect {
            try await migrator.migrate()
        } throws: { error in
            (error as? PostgresError)?.message.contains("DATABASE_MIGRATION_URL") == true
        }
    }
}
