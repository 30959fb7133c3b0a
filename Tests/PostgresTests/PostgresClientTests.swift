import Foundation
import Postgres
import Testing

@Suite struct PostgresClientTests {
    @Test func uniqueViolationsCarryTheServersDiagnostics() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE users (id int PRIMARY KEY, email text CONSTRAINT users_email_key UNIQUE)")
            try await db.execute("INSERT INTO users VALUES ($1, $2)", [1, "a@example.com"])
            await #expect {
                try await db.execute("INSERT INTO users VALUES ($1, $2)", [2, "a@example.com"])
            } throws: { error in
                guard let error = error as? PostgresError else { return false }
                return error.code == .server && error.sqlState == "23505" && error.isUniqueViolation
                    && error.constraint == "users_email_key" && error.detail?.contains("already exists") == true
            }
            // Other server errors are not unique violations.
            await #expect {
                try await db.query("SELECT * FROM no_such_table")
            } throws: { error in
                (error as? PostgresError)?.sqlState == "42P01" && (error as? PostgresError)?.isUniqueViolation == false
            }
        }
    }

    /// Rows are read in place from libpq's result, which they own: they stay whole after their connection ran other
    /// statements and after the client shut down, on whatever thread reads them.
    @Test func rowsOutliveTheirConnectionAndItsClient() async throws {
        let rows = try await TestDatabase.withSchema { db, _ in
            let rows = try await db.query(
                "SELECT g AS n, 'name ' || g AS name, NULL::text AS nothing, timestamptz '2026-11-29 00:00:01.5+00' + g * interval '1 day' AS at, 'infinity'::timestamptz AS never FROM generate_series(1, 50) g"
            )
            for _ in 0..<20 { _ = try await db.query("SELECT repeat('x', 4000) AS filler FROM generate_series(1, 20)") }
            return rows
        }
        let read = try await Task.detached {
            try rows.map { row in
                (
                    try row.decode("n", as: Int.self), try row.decode("name", as: String.self), try row.decode("nothing", as: String?.self),
                    try row.decode("at", as: Date.self), try row.decode("never", as: Date.self)
                )
            }
        }.value
        #expect(read.count == 50 && read[49].0 == 50 && read[49].1 == "name 50" && read[49].2 == nil && read[0].4 == .distantFuture)
        #expect(read[0].3 == Date(timeIntervalSince1970: 1_795_996_801.5))  // 2026-11-30 00:00:01.5 UTC
        #expect(rows[0].isNull(2) && !rows[0].isNull(1) && rows[0].index(of: "at") == 3)
    }

    @Test func executeScriptRunsSeveralStatements() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE a (x int); INSERT INTO a VALUES (1), (2); INSERT INTO a VALUES (3);")
            #expect(try await db.query("SELECT sum(x) AS s FROM a")[0].decode("s", as: Int.self) == 6)
        }
    }

    @Test func theExtendedProtocolRefusesSeveralStatements() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE a (x int)")
            await #expect(throws: PostgresError.self) {
                try await db.execute("INSERT INTO a VALUES (1); DROP TABLE a")
            }
            #expect(try await db.query("SELECT count(*) AS n FROM a")[0].decode("n", as: Int.self) == 0)
        }
    }

    @Test func transactionsCommit() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE t (x int)")
            let inside = try await db.transaction { tx in
                try await tx.execute("INSERT INTO t VALUES ($1)", [1])
                try await tx.execute("INSERT INTO t VALUES ($1)", [2])
                return try await tx.query("SELECT count(*) AS n FROM t")[0].decode("n", as: Int.self)
            }
            #expect(inside == 2)
            #expect(try await db.query("SELECT count(*) AS n FROM t")[0].decode("n", as: Int.self) == 2)
        }
    }

    struct Boom: Error {}

    /// With one connection, the pool keeps working only if the failed transaction's connection was rolled back.
    @Test func aThrowingBodyRollsBackAndTheConnectionStaysUsable() async throws {
        try await TestDatabase.withSchema(poolSize: 1) { db, _ in
            try await db.executeScript("CREATE TABLE t (x int)")
            await #expect(throws: Boom.self) {
                try await db.transaction { tx in
                    try await tx.execute("INSERT INTO t VALUES ($1)", [1])
                    throw Boom()
                }
            }
            #expect(try await db.query("SELECT count(*) AS n FROM t")[0].decode("n", as: Int.self) == 0)
            // A server error inside the body rolls back too, and the next transaction starts clean.
            await #expect(throws: PostgresError.self) {
                try await db.transaction { tx in
                    try await tx.execute("INSERT INTO t VALUES ($1)", [2])
                    try await tx.execute("INSERT INTO t VALUES ($1)", ["not a number"])
                }
            }
            try await db.transaction { tx in try await tx.execute("INSERT INTO t VALUES ($1)", [3]) }
            #expect(try await db.query("SELECT array_agg(x)::text AS xs FROM t")[0].decode("xs", as: String.self) == "{3}")
        }
    }

    /// PostgreSQL answers `COMMIT` in a failed transaction with `ROLLBACK`; that must not pass for success.
    @Test func committingAFailedTransactionThrows() async throws {
        try await TestDatabase.withSchema(poolSize: 1) { db, _ in
            try await db.executeScript("CREATE TABLE t (x int)")
            await #expect {
                try await db.transaction { tx in
                    try await tx.execute("INSERT INTO t VALUES ($1)", [1])
                    _ = try? await tx.query("SELECT 1 / 0")  // swallowed by the body
                }
            } throws: { error in
                (error as? PostgresError)?.message.contains("rolled back") == true
            }
            #expect(try await db.query("SELECT count(*) AS n FROM t")[0].decode("n", as: Int.self) == 0)
        }
    }

    @Test func aTransactionCannotBeUsedAfterItEnds() async throws {
        try await TestDatabase.withSchema { db, _ in
            let escaped = try await db.transaction { tx in tx }
            await #expect {
                try await escaped.query("SELECT 1")
            } throws: { error in
                (error as? PostgresError)?.code == .closed
            }
        }
    }

    /// A `BEGIN` sent as a plain statement must not leak into the next borrower's statements.
    @Test func aTransactionLeftOpenByAPlainStatementIsRolledBack() async throws {
        try await TestDatabase.withSchema(poolSize: 1) { db, _ in
            try await db.execute("BEGIN")
            try await db.execute("SET LOCAL statement_timeout = '1234ms'")  // outside a transaction this does nothing
            #expect(try await db.query("SHOW statement_timeout")[0].decode(0, as: String.self) == "30s")
        }
    }

    @Test func statementTimeoutThrowsTimeoutAndKeepsTheConnection() async throws {
        try await TestDatabase.withSchema(poolSize: 1, statementTimeout: .milliseconds(200)) { db, _ in
            let setting = try await db.query("SHOW statement_timeout")[0].decode(0, as: String.self)
            #expect(setting == "200ms")
            await #expect {
                try await db.query("SELECT pg_sleep(5)")
            } throws: { error in
                (error as? PostgresError)?.code == .timeout && (error as? PostgresError)?.sqlState == "57014"
            }
            #expect(try await db.query("SELECT 41 + 1 AS n")[0].decode("n", as: Int.self) == 42)
        }
    }

    @Test func anExhaustedPoolQueuesItsCallersAndCountsTheWaits() async throws {
        try await TestDatabase.withSchema(poolSize: 2) { db, _ in
            let (waits, seconds) = (PostgresConnectionStats.waits, PostgresConnectionStats.waitSeconds)
            // 40 callers on 2 connections: each waits its turn; none fails.
            try await withThrowingTaskGroup(of: Int.self) { group in
                for call in 0..<40 {
                    group.addTask { try await db.query("SELECT $1::int AS n, pg_sleep(0.01)", [call])[0].decode("n") }
                }
                var answered = Set<Int>()
                for try await n in group { answered.insert(n) }
                #expect(answered == Set(0..<40))
            }
            // Other suites share the process-wide counters: they only add.
            #expect(PostgresConnectionStats.waits - waits >= 38)
            #expect(PostgresConnectionStats.waitSeconds - seconds > 0.1)
        }
    }

    @Test func searchPathSelectsTheSchema() async throws {
        try await TestDatabase.withSchema { db, schema in
            try await db.executeScript("CREATE TABLE placed (x int)")
            #expect(try await db.query("SELECT current_schema() AS s")[0].decode("s", as: String.self) == schema.name)
            let found = try await db.query(
                "SELECT count(*) AS n FROM pg_tables WHERE schemaname = $1 AND tablename = 'placed'", [schema.name])
            #expect(try found[0].decode("n", as: Int.self) == 1)

            // A path of several schemas (spaces and all) reaches the server intact.
            var configuration = try schema.configuration(poolSize: 1)
            configuration.searchPath = "\(schema.name), public"
            let wide = PostgresClient(configuration: configuration, logger: TestDatabase.logger)
            defer { wide.shutdown() }
            #expect(try await wide.query("SHOW search_path")[0].decode(0, as: String.self) == "\(schema.name), public")
            #expect(try await wide.query("SELECT count(*) AS n FROM placed")[0].decode("n", as: Int.self) == 0)
        }
    }

    /// Skewed data makes a plan for a rare value look cheaper than the generic plan, so PostgreSQL on its own plans the
    /// statement again at every run; with `genericPlans` it plans it once.
    @Test(arguments: [false, true]) func aPreparedStatementKeepsItsGenericPlanWhenAsked(genericPlans: Bool) async throws {
        try await TestDatabase.withSchema { db, schema in
            try await db.executeScript(
                """
                CREATE TABLE skewed (k int, v int);
                INSERT INTO skewed SELECT CASE WHEN i <= 10 THEN i ELSE 0 END, i FROM generate_series(1, 5000) i;
                CREATE INDEX skewed_k ON skewed (k);
                ANALYZE skewed;
                """)
            var configuration = try schema.configuration(poolSize: 1)
            configuration.genericPlans = genericPlans
            let client = PostgresClient(configuration: configuration, logger: TestDatabase.logger)
            defer { client.shutdown() }
            for _ in 0..<10 {
                #expect(try await client.query("SELECT v FROM skewed WHERE k = $1", [7]).count == 1)
            }
            let plans = try await client.query(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = 'SELECT v FROM skewed WHERE k = $1'")
            #expect(plans.count == 1)
            #expect(try plans[0].decode("generic_plans", as: Int.self) == (genericPlans ? 10 : 0))
            #expect(try plans[0].decode("custom_plans", as: Int.self) == (genericPlans ? 0 : 10))
        }
    }

    @Test func aNulCharacterInAParameterIsRefusedBeforeSending() async throws {
        try await TestDatabase.withSchema { db, _ in
            await #expect {
                try await db.query("SELECT $1::text", ["a\u{0}b"])
            } throws: { error in
                (error as? PostgresError)?.message.contains("NUL") == true
            }
        }
    }

    @Test func shutdownMakesLaterCallsThrowClosed() async throws {
        let db = PostgresClient(configuration: try TestDatabase.configuration(), logger: TestDatabase.logger)
        #expect(try await db.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
        db.shutdown()
        await #expect {
            try await db.query("SELECT 1")
        } throws: { error in
            (error as? PostgresError)?.code == .closed
        }
        await #expect {
            try await db.transaction { tx in try await tx.execute("SELECT 1") }
        } throws: { error in
            (error as? PostgresError)?.code == .closed
        }
    }
}
