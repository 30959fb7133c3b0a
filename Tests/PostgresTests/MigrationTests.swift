import Foundation
import Postgres
import Testing

@Suite struct MigrationTests {
    static let files = [
        "0001_people.sql": "CREATE TABLE people (id int PRIMARY KEY, name text NOT NULL);",
        "0002_meals.sql":
            "CREATE TABLE meals (id int PRIMARY KEY, person int REFERENCES people (id));\nINSERT INTO people VALUES (1, 'seed');",
        "0010_index.sql": "CREATE INDEX meals_person ON meals (person);",
        "README.md": "not a migration",
    ]

    @Test func loadsFilesSortedByVersion() throws {
        let directory = try MigrationDirectory(Self.files)
        let migrations = try Migration.load(directory: directory.url)
        #expect(migrations.map(\.version) == [1, 2, 10])
        #expect(migrations.map(\.name) == ["people", "meals", "index"])
        #expect(migrations[0].sql == Self.files["0001_people.sql"])
        #expect(migrations[2].file == "0010_index.sql")
    }

    @Test(arguments: ["people.sql", "0003-people.sql", "abc_people.sql", "0003_.sql", "0003_bad name.sql"])
    func rejectsBadFileNamesNamingTheFile(name: String) throws {
        let directory = try MigrationDirectory(["0001_ok.sql": "SELECT 1", name: "SELECT 1"])
        #expect {
            try Migration.load(directory: directory.url)
        } throws: { error in
            (error as? MigrationError)?.code == .invalidFile && "\(error)".contains(name)
        }
    }

    @Test func rejectsDuplicateVersionsNamingBothFiles() throws {
        let directory = try MigrationDirectory(["0002_a.sql": "SELECT 1", "2_b.sql": "SELECT 2"])
        #expect {
            try Migration.load(directory: directory.url)
        } throws: { error in
            (error as? MigrationError)?.code == .duplicateVersion && "\(error)".contains("0002_a.sql") && "\(error)".contains("2_b.sql")
        }
    }

    @Test func checksumIsTheSHA256OfTheSQL() {
        #expect(Migration(version: 1, name: "x", sql: "abc").checksum == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Migration(version: 1, name: "x", sql: "").checksum == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // Two blocks: the length spills into a second 64-byte block.
        #expect(
            Migration(version: 1, name: "x", sql: "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").checksum
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(Migration(version: 1, name: "x", sql: "Ünïcødé ✓").checksum.count == 64)
    }

    @Test func appliesInOrderAndRecordsEachInTheConfiguredSchema() async throws {
        let directory = try MigrationDirectory(Self.files)
        try await TestDatabase.withSchema { db, schema in
            let migrator = Migrator(client: db, migrations: try Migration.load(directory: directory.url), logger: TestDatabase.logger)
            #expect(try await migrator.status().allSatisfy { $0.appliedAt == nil })
            let started = Date()
            let applied = try await migrator.migrate()
            #expect(applied.map(\.version) == [1, 2, 10])
            #expect(try await db.query("SELECT name FROM people")[0].decode("name", as: String.self) == "seed")

            let records = try await db.query("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version")
            #expect(try records.map { try $0.decode("version", as: Int.self) } == [1, 2, 10])
            #expect(try records.map { try $0.decode("name", as: String.self) } == ["people", "meals", "index"])
            #expect(try records[0].decode("checksum", as: String.self) == applied[0].checksum)
            let status = try await migrator.status()
            #expect(status.map(\.migration.version) == [1, 2, 10])
            #expect(status.allSatisfy { ($0.appliedAt ?? .distantPast) >= started.addingTimeInterval(-5) })

            // The table lives in the test's schema (the searchPath), not in public.
            try await TestDatabase.withAdmin { admin in
                let located = try await admin.query("SELECT to_regclass($1) IS NOT NULL AS found", ["\(schema.name).schema_migrations"])
                #expect(try located[0].decode("found", as: Bool.self))
            }
            // The session settings the migrator changed are back to the configured ones.
            #expect(try await db.query("SHOW statement_timeout")[0].decode(0, as: String.self) == "30s")
        }
    }

    @Test func aSecondRunAppliesNothing() async throws {
        let directory = try MigrationDirectory(Self.files)
        try await TestDatabase.withSchema { db, _ in
            let migrations = try Migration.load(directory: directory.url)
            try await Migrator(client: db, migrations: migrations, logger: TestDatabase.logger).migrate()
            let again = try await Migrator(client: db, migrations: migrations, logger: TestDatabase.logger).migrate()
            #expect(again.isEmpty)
            #expect(try await db.query("SELECT count(*) AS n FROM schema_migrations")[0].decode("n", as: Int.self) == 3)
            // Only a new file is applied later.
            try directory.write("0011_more.sql", "ALTER TABLE people ADD COLUMN nickname text")
            let later = try await Migrator(
                client: db, migrations: try Migration.load(directory: directory.url), logger: TestDatabase.logger
            )
            .migrate()
            #expect(later.map(\.version) == [11])
        }
    }

    /// Two processes start at once: the advisory lock makes one apply everything and the other wait, then do nothing.
    @Test(.timeLimit(.minutes(1)))
    func concurrentMigratorsApplyEachMigrationOnce() async throws {
        var files = Self.files
        files["0001_people.sql"] = "SELECT pg_sleep(0.3);\n" + files["0001_people.sql"]!
        let directory = try MigrationDirectory(files)
        try await TestDatabase.withSchema { db, schema in
            let migrations = try Migration.load(directory: directory.url)
            let other = try schema.client()
            defer { other.shutdown() }
            async let first = Migrator(client: db, migrations: migrations, logger: TestDatabase.logger).migrate()
            async let second = Migrator(client: other, migrations: migrations, logger: TestDatabase.logger).migrate()
            let results = try await [first, second]
            #expect(results.map(\.count).sorted() == [0, 3])
            #expect(try await db.query("SELECT count(*) AS n FROM schema_migrations")[0].decode("n", as: Int.self) == 3)
        }
    }

    @Test func aFailingMigrationRollsBackCompletelyAndNamesItself() async throws {
        let directory = try MigrationDirectory([
            "0001_people.sql": Self.files["0001_people.sql"]!,
            "0002_broken.sql": "CREATE TABLE half (x int);\nINSERT INTO people VALUES (1, 'x');\nSELECT * FROM no_such_table;",
            "0003_after.sql": "CREATE TABLE after (x int);",
        ])
        try await TestDatabase.withSchema { db, _ in
            let migrator = Migrator(client: db, migrations: try Migration.load(directory: directory.url), logger: TestDatabase.logger)
            await #expect {
                try await migrator.migrate()
            } throws: { error in
                guard let error = error as? MigrationError else { return false }
                return error.code == .failed && error.message.contains("0002_broken.sql")
                    && error.message.contains("relation \"no_such_table\" does not exist") && error.underlying?.sqlState == "42P01"
            }
            let tables = try await db.query("SELECT to_regclass('half') IS NULL AS no_half, to_regclass('after') IS NULL AS no_after")[0]
            #expect(try tables.decode("no_half", as: Bool.self))
            #expect(try tables.decode("no_after", as: Bool.self))
            #expect(try await db.query("SELECT count(*) AS n FROM people")[0].decode("n", as: Int.self) == 0)
            #expect(
                try await db.query("SELECT array_agg(version)::text AS v FROM schema_migrations")[0].decode("v", as: String.self) == "{1}")
            // Fixed, it applies (the failed attempt left no record behind).
            try directory.write("0002_broken.sql", "CREATE TABLE half (x int);")
            let applied = try await Migrator(
                client: db, migrations: try Migration.load(directory: directory.url), logger: TestDatabase.logger
            )
            .migrate()
            #expect(applied.map(\.version) == [2, 3])
        }
    }

    @Test func anEditedAppliedMigrationIsRefusedAndNothingIsApplied() async throws {
        let directory = try MigrationDirectory(["0001_people.sql": Self.files["0001_people.sql"]!])
        try await TestDatabase.withSchema { db, _ in
            try await Migrator(client: db, migrations: try Migration.load(directory: directory.url), logger: TestDatabase.logger).migrate()
            try directory.write("0001_people.sql", "CREATE TABLE people (id bigint PRIMARY KEY);")
            try directory.write("0002_new.sql", "CREATE TABLE newer (x int);")
            let migrator = Migrator(client: db, migrations: try Migration.load(directory: directory.url), logger: TestDatabase.logger)
            await #expect {
                try await migrator.migrate()
            } throws: { error in
                (error as? MigrationError)?.code == .checksumMismatch && "\(error)".contains("0001_people.sql")
            }
            #expect(try await db.query("SELECT to_regclass('newer') IS NULL AS absent")[0].decode("absent", as: Bool.self))
            #expect(try await db.query("SELECT count(*) AS n FROM schema_migrations")[0].decode("n", as: Int.self) == 1)
        }
    }
}
