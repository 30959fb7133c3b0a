import Foundation
import Postgres
import Testing

/// Parameters and results: every supported type survives a trip through the server, and what the server sees
/// is the value meant (checked with server-side functions, not just by reading it back).
@Suite struct PostgresCodingTests {
    @Test func hostileStringsAreBoundNotSpliced() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE notes (id serial PRIMARY KEY, body text)")
            let hostile = "Robert'); DROP TABLE notes; -- \"quoted\" \\backslash\\ $1 héllo ✓"
            #expect(try await db.execute("INSERT INTO notes (body) VALUES ($1)", [hostile]) == 1)
            let rows = try await db.query("SELECT body FROM notes WHERE body = $1", [hostile])
            #expect(rows.count == 1)
            #expect(try rows[0].decode("body", as: String.self) == hostile)
            #expect(try await db.query("SELECT count(*) AS n FROM notes")[0].decode("n", as: Int.self) == 1)
        }
    }

    @Test func nilBindsNullAndNullDecodesIntoOptionals() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE t (id int PRIMARY KEY, name text, at timestamptz)")
            let missingDate: Date? = nil
            try await db.execute("INSERT INTO t VALUES ($1, $2, $3)", [1, nil, missingDate])
            let row = try await db.query("SELECT name, at, name IS NULL AS name_is_null FROM t")[0]
            #expect(try row.decode("name_is_null", as: Bool.self))
            #expect(try row.decode("name", as: String?.self) == nil)
            #expect(try row.decode("at", as: Date?.self) == nil)
            #expect(row.isNull(0))
        }
    }

    @Test func nullIntoANonOptionalNamesTheColumn() async throws {
        try await TestDatabase.withSchema { db, _ in
            let row = try await db.query("SELECT NULL::text AS nickname")[0]
            #expect {
                try row.decode("nickname", as: String.self)
            } throws: { error in
                let error = error as? PostgresError
                return error?.code == .decoding && error?.message.contains("nickname") == true
            }
        }
    }

    /// Up to `scannedColumns` columns a name is found by comparing, past that through a dictionary: both give the first
    /// column of a repeated name, find long names, and miss an absent one.
    @Test(arguments: [3, 40]) func columnsAreFoundByNameInNarrowAndWideResults(width: Int) async throws {
        try await TestDatabase.withSchema { db, _ in
            let others = (0..<width).map { "\($0) AS column_number_\($0)_of_a_long_name" }.joined(separator: ", ")
            let row = try await db.query("SELECT 'first' AS twice, \(others), 'second' AS twice")[0]
            #expect(row.columns.count == width + 2)
            #expect(try row.decode("twice", as: String.self) == "first")
            #expect(try row.decode("column_number_\(width - 1)_of_a_long_name", as: Int.self) == width - 1)
            #expect(try row.decode("column_number_0_of_a_long_name", as: Int.self) == 0)
            #expect(throws: PostgresError.self) { try row.decode("column_number_\(width)_of_a_long_name", as: Int.self) }
        }
    }

    @Test func unknownColumnsAndUndecodableValuesAreDecodingErrors() async throws {
        try await TestDatabase.withSchema { db, _ in
            let row = try await db.query("SELECT 'abc'::text AS word, 7 AS n")[0]
            #expect(row.columns == ["word", "n"])
            #expect {
                try row.decode("nope", as: String.self)
            } throws: { error in
                (error as? PostgresError)?.code == .decoding && "\(error)".contains("nope")
            }
            #expect {
                try row.decode("word", as: Int.self)
            } throws: { error in
                (error as? PostgresError)?.code == .decoding && "\(error)".contains("word")
            }
            #expect {
                try row.decode(5, as: Int.self)
            } throws: { error in
                (error as? PostgresError)?.code == .decoding
            }
            #expect(try row.decode(1, as: Int.self) == 7)
        }
    }

    @Test func integersRoundTrip() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE n (a bigint, b integer, c bigint)")
            try await db.execute("INSERT INTO n VALUES ($1, $2, $3)", [Int.min, Int32.max, Int64.max])
            let row = try await db.query("SELECT a, b, c, a < 0 AS negative FROM n")[0]
            #expect(try row.decode("a", as: Int.self) == Int.min)
            #expect(try row.decode("b", as: Int32.self) == Int32.max)
            #expect(try row.decode("c", as: Int64.self) == Int64.max)
            #expect(try row.decode("negative", as: Bool.self))
        }
    }

    @Test func doublesRoundTripExactly() async throws {
        try await TestDatabase.withSchema { db, _ in
            let values: [Double] = [0.1, -1e-300, .pi, .greatestFiniteMagnitude, .leastNonzeroMagnitude, .infinity, -.infinity]
            for value in values {
                let row = try await db.query("SELECT $1::float8 AS v, $1::float8 = $2::text::float8 AS same", [value, value.description])
                #expect(try row[0].decode("v", as: Double.self) == value)
                #expect(try row[0].decode("same", as: Bool.self))
            }
            let nan = try await db.query("SELECT $1::float8 AS v, $1::float8 = 'NaN'::float8 AS is_nan", [Double.nan])[0]
            #expect(try nan.decode("v", as: Double.self).isNaN)
            #expect(try nan.decode("is_nan", as: Bool.self))
            #expect(try await db.query("SELECT 12.50::numeric AS v")[0].decode("v", as: Double.self) == 12.5)
        }
    }

    @Test func boolsRoundTrip() async throws {
        try await TestDatabase.withSchema { db, _ in
            let row = try await db.query("SELECT $1 AS t, $2 AS f, NOT $1 AS not_t", [true, false])[0]
            #expect(try row.decode("t", as: Bool.self) == true)
            #expect(try row.decode("f", as: Bool.self) == false)
            #expect(try row.decode("not_t", as: Bool.self) == false)
        }
    }

    @Test func uuidsRoundTrip() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE u (id uuid PRIMARY KEY)")
            let id = UUID()
            try await db.execute("INSERT INTO u VALUES ($1)", [id])
            let row = try await db.query("SELECT id, id::text AS text FROM u WHERE id = $1", [id])[0]
            #expect(try row.decode("id", as: UUID.self) == id)
            #expect(try row.decode("text", as: String.self) == id.uuidString.lowercased())
        }
    }

    @Test func datesKeepMicrosecondsAndAreUTC() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE d (at timestamptz)")
            let date = Date(timeIntervalSince1970: 1_700_000_000.123456)
            try await db.execute("INSERT INTO d VALUES ($1)", [date])
            let row = try await db.query(
                "SELECT at, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS utc, extract(epoch FROM at)::text AS epoch FROM d"
            )[0]
            #expect(try row.decode("at", as: Date.self) == date)
            #expect(try row.decode("utc", as: String.self) == "2023-11-14 22:13:20.123456")
            #expect(try row.decode("epoch", as: String.self) == "1700000000.123456")

            let server = try await db.query(
                "SELECT '2000-01-01 00:00:00.000001+00'::timestamptz AS at, '1969-12-31 23:59:59.5+00'::timestamptz AS before")[0]
            #expect(try server.decode("at", as: Date.self) == Date(timeIntervalSince1970: 946_684_800.000001))
            #expect(try server.decode("before", as: Date.self) == Date(timeIntervalSince1970: -0.5))
            let old = Date(timeIntervalSince1970: -2_208_988_800.25)  // 1900-01-01 minus a quarter second
            #expect(try await db.query("SELECT $1::timestamptz AS v", [old])[0].decode("v", as: Date.self) == old)
        }
    }

    @Test(arguments: [
        ("2024-03-01 12:34:56.789012+00", 1_709_296_496.789012),
        ("2024-03-01 14:34:56.789012+02", 1_709_296_496.789012),
        ("2024-03-01 07:04:56.789012-05:30", 1_709_296_496.789012),
        ("1900-01-01 00:00:00+00:09:21", -2_208_989_361.0),
        ("2024-03-01", 1_709_251_200.0),
        ("2024-03-01 12:34:56", 1_709_296_496.0),
        ("0001-01-01 00:00:00+00 BC", -62_167_219_200.0),
    ])
    func timestampTextParses(text: String, seconds: Double) {
        #expect(Date(postgresText: text, type: 1184) == Date(timeIntervalSince1970: seconds))
    }

    @Test func timestampsOutsideTheCalendarRoundTrip() async throws {
        try await TestDatabase.withSchema { db, _ in
            let bc = Date(timeIntervalSince1970: -62_167_219_200.0)
            let row = try await db.query("SELECT $1::timestamptz AS v, $1::timestamptz::text AS text", [bc])[0]
            #expect(try row.decode("v", as: Date.self) == bc)
            #expect(try row.decode("text", as: String.self) == "0001-01-01 00:00:00+00 BC")
            let infinite = try await db.query("SELECT 'infinity'::timestamptz AS v")[0]
            #expect(try infinite.decode("v", as: Date.self) == .distantFuture)
        }
    }

    @Test func byteaKeepsEveryByte() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE b (raw bytea, data bytea)")
            let bytes: [UInt8] = [0, 1, 0, 255, 39, 92, 0, 120]
            let data = Data([0, 0, 0, 0xde, 0xad, 0xbe, 0xef])
            try await db.execute("INSERT INTO b VALUES ($1, $2)", [bytes, data])
            let row = try await db.query("SELECT raw, data, octet_length(raw) AS raw_length, octet_length(data) AS data_length FROM b")[0]
            #expect(try row.decode("raw", as: [UInt8].self) == bytes)
            #expect(try row.decode("data", as: Data.self) == data)
            #expect(try row.decode("raw_length", as: Int.self) == bytes.count)
            #expect(try row.decode("data_length", as: Int.self) == data.count)
            #expect(try await db.query("SELECT $1 AS empty", [[UInt8]()])[0].decode("empty", as: [UInt8].self) == [])
        }
    }

    @Test func stringsFillTypedColumnsTheServerInfers() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TYPE mood AS ENUM ('ok', 'hungry'); CREATE TABLE s (id uuid, m mood, doc jsonb)")
            let id = UUID()
            try await db.execute("INSERT INTO s VALUES ($1, $2, $3)", [id.uuidString, "hungry", #"{"carbs": 42}"#])
            let row = try await db.query("SELECT id, m::text AS m, doc->>'carbs' AS carbs FROM s")[0]
            #expect(try row.decode("id", as: UUID.self) == id)
            #expect(try row.decode("m", as: String.self) == "hungry")
            #expect(try row.decode("carbs", as: Int.self) == 42)
        }
    }

    @Test func affectedRowsAndRowCollections() async throws {
        try await TestDatabase.withSchema { db, _ in
            try await db.executeScript("CREATE TABLE r (id int); INSERT INTO r SELECT generate_series(1, 5)")
            #expect(try await db.execute("UPDATE r SET id = id + 10 WHERE id <= $1", [3]) == 3)
            #expect(try await db.execute("DELETE FROM r WHERE id > $1", [100]) == 0)
            let rows = try await db.query("SELECT id FROM r ORDER BY id")
            #expect(rows.affectedRows == 5)
            #expect(try rows.map { try $0.decode("id", as: Int.self) } == [4, 5, 11, 12, 13])
            #expect(try await db.query("SELECT id FROM r WHERE false").isEmpty)
        }
    }
}
