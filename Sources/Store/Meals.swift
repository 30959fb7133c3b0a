import Foundation
import JSON
import Postgres

package struct Meal: Sendable, Equatable {
    package var id: Int64
    package var localId: String?
    package var name: String
    package var carbEstimate: Double
    package var confidenceLow: Double?
    package var confidenceHigh: Double?
    package var confidenceLevel: Double?
    package var analysis: String?
    /// The stored photo of an analysed meal; nil for a meal made offline, and once retention deleted the photo.
    package var photoID: Int64?
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: Int64, localId: String?, name: String, carbEstimate: Double, confidenceLow: Double? = nil, confidenceHigh: Double? = nil,
        confidenceLevel: Double? = nil, analysis: String? = nil, photoID: Int64? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.localId = localId
        self.name = name
        self.carbEstimate = carbEstimate
        self.confidenceLow = confidenceLow
        self.confidenceHigh = confidenceHigh
        self.confidenceLevel = confidenceLevel
        self.analysis = analysis
        self.photoID = photoID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    static let columns =
        "id, local_id, name, carb_estimate, confidence_low, confidence_high, confidence_level, analysis, photo_id, created_at, updated_at"

    init(row: PostgresRow) throws {
        try self.init(row: row, at: Self.start(in: row))
    }

    /// Where ``columns`` begin in `row`'s result: found once for a page, whose rows all have them at the same place.
    static func start(in row: PostgresRow) throws -> Int {
        guard let start = row.index(of: "id") else { throw StoreError("no meal columns in the result") }
        return start
    }

    /// The meal in ``columns``, in their order from `start`: by position, not by name (a page of 20 looked up 220
    /// names, perf 2026-11-29).
    init(row: PostgresRow, at start: Int) throws {
        id = try row.decode(start)
        localId = try row.decode(start + 1)
        name = try row.decode(start + 2)
        carbEstimate = try row.decode(start + 3)
        confidenceLow = try row.decode(start + 4)
        confidenceHigh = try row.decode(start + 5)
        confidenceLevel = try row.decode(start + 6)
        analysis = try row.decode(start + 7)
        photoID = try row.decode(start + 8)
        createdAt = try row.decode(start + 9)
        updatedAt = try row.decode(start + 10)
    }
}

/// A meal the app made offline and sends with `meals/sync`.
package struct LocalMeal: Sendable, Equatable {
    package var localId: String
    package var name: String
    package var carbEstimate: Double
    package var confidenceLevel: Double?
    package var createdAt: Date

    package init(localId: String, name: String, carbEstimate: Double, confidenceLevel: Double?, createdAt: Date) {
        self.localId = localId
        self.name = name
        self.carbEstimate = carbEstimate
        self.confidenceLevel = confidenceLevel
        self.createdAt = createdAt
    }
}

/// Totals over a window of meals.
package struct MealSummary: Sendable, Equatable {
    package var mealCount: Int
    package var totalCarbs: Double
}

package struct Meals: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    /// A page of the meals of a user read in the same statement: the user's tier sets the history window, and no
    /// row at all comes back when the user is gone or, given `liveSession`, that sign-in was revoked (as
    /// `Users.find(id:liveSession:)` checks). One statement per request instead of the account read and the page.
    package func page(
        ofUser userID: String, liveSession session: UUID?, now: Date, limit: Int, offset: Int
    ) async throws -> (since: Date?, meals: [Meal], total: Int)? {
        let rows = try await db.query(Self.userPage, [userID, session, now, limit, offset])
        guard let first = rows.first else { return nil }
        let since: Date? = try first.decode("since")
        let total: Int = try first.decode("total")
        // A user without meals on this page comes back as one row of the user with no meal (the outer join).
        let start = try Meal.start(in: first)
        guard !first.isNull(start) else { return (since, [], total) }
        return (since, try rows.map { try Meal(row: $0, at: start) }, total)
    }

    /// The tiers' history windows, from `Tier.historyDays` (constants of the code, not user data). The total is
    /// counted once, from the index alone, and the page is read in the index's order up to its last row: a window
    /// count over every meal of the window (`count(*) OVER ()`) made pgbench run this statement 15–40% slower.
    /// Its parameters: the user, the sign-in (or NULL), now, limit, offset. Also run, undecoded, by the benchmark
    /// `carbscan-bench hello-server` (`GET /page`: the floor of `GET /meals` in this stack).
    package static let userPage: String = {
        let windows = Tier.allCases.compactMap { tier in
            tier.historyDays.map { "WHEN '\(tier.rawValue)' THEN $3::timestamptz - interval '\($0) days'" }
        }
        return """
            WITH u AS MATERIALIZED (
              SELECT since, (
                SELECT count(*) FROM meals WHERE user_id = $1 AND created_at >= COALESCE(since, '-infinity')) AS total
              FROM (
                SELECT CASE subscription_tier \(windows.joined(separator: " ")) END AS since FROM users
                WHERE id = $1
                  AND ($2::uuid IS NULL OR NOT EXISTS (
                    SELECT 1 FROM refresh_tokens WHERE family_id = $2 AND revoked_at IS NOT NULL))) w)
            SELECT u.since, u.total, m.* FROM u LEFT JOIN LATERAL (
              SELECT \(Meal.columns) FROM meals
              WHERE user_id = $1 AND created_at >= COALESCE(u.since, '-infinity')
              ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5) m ON true
            """
    }()

    package func find(id: Int64, userID: String) async throws -> Meal? {
        try await db.query("SELECT \(Meal.columns) FROM meals WHERE id = $1 AND user_id = $2", [id, userID]).first.map(Meal.init)
    }

    /// Stores one offline meal, once per `localId`: a meal the server already has keeps the server's version
    /// (server wins). Returns the server id and whether this call created it. Safe under concurrency: the
    /// unique (user, localId) decides.
    package func upsertLocal(userID: String, _ meal: LocalMeal) async throws -> (id: Int64, inserted: Bool) {
        let inserted = try await db.query(
            """
            INSERT INTO meals (user_id, local_id, name, carb_estimate, confidence_level, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp())
            ON CONFLICT (user_id, local_id) DO NOTHING RETURNING id
            """,
            [userID, meal.localId, meal.name, meal.carbEstimate, meal.confidenceLevel, meal.createdAt]
        )
        if let row = inserted.first { return (try row.decode("id"), true) }
        let existing = try await db.query(
            "SELECT id FROM meals WHERE user_id = $1 AND local_id = $2", [userID, meal.localId])
        guard let row = existing.first else {
            throw StoreError("meal \(meal.localId) was neither inserted nor found")
        }
        return (try row.decode("id"), false)
    }

    /// One page of a delta sync: the meals changed at or after `since` (all when nil) inside the history window,
    /// oldest change first, and the timestamp the client sends next time.
    ///
    /// Two things make the next timestamp safe. A change is stamped when its statement runs (migration 0003), but
    /// a transaction that wrote a meal and has not committed yet makes it visible later with an older stamp: the
    /// next timestamp never passes the start of the oldest transaction holding a write lock on `meals` (the
    /// horizon; it needs to see other sessions' `pg_stat_activity`, as the one database role does). And a full
    /// page ends on a whole millisecond (the precision clients see): every meal before it is in the page, so
    /// following the timestamps neither loops nor skips. Meals at the boundary may come twice; clients key by id.
    package func changes(userID: String, since: Date?, windowStart: Date?, limit: Int) async throws -> (
        meals: [Meal], hasMore: Bool, next: Date
    ) {
        // Transactions holding a write lock on this meals table may still commit changes stamped before now.
        let horizonRows = try await db.query(
            """
            SELECT LEAST(clock_timestamp(), (
                SELECT min(a.xact_start) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'relation' AND l.relation = 'meals'::regclass AND l.mode = 'RowExclusiveLock'
                  AND l.pid <> pg_backend_pid())) AS horizon
            """)
        let horizon = Self.floorToMillisecond(try horizonRows[horizonRows.startIndex].decode("horizon", as: Date.self))
        let select = """
            SELECT \(Meal.columns) FROM meals
            WHERE user_id = $1 AND ($2::timestamptz IS NULL OR updated_at >= $2)
              AND ($3::timestamptz IS NULL OR created_at >= $3) AND ($4::timestamptz IS NULL OR updated_at < $4)
            ORDER BY updated_at, id
            """
        let page = try await db.query(select + " LIMIT $5", [userID, since, windowStart, nil, limit + 1]).map(Meal.init)
        guard page.count > limit else { return (page, false, horizon) }
        // Complete the millisecond of the page's last change, so the next page starts after all of it.
        let end = Self.floorToMillisecond(page[limit - 1].updatedAt).addingTimeInterval(0.001)
        let full = try await db.query(select, [userID, since, windowStart, end]).map(Meal.init)
        return (full, true, min(end, horizon))
    }

    static func floorToMillisecond(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    /// Count and carb total for each window [start, end): one scan of the user's meals.
    package func summaries(userID: String, windows: [(start: Date?, end: Date?)]) async throws -> [MealSummary] {
        guard !windows.isEmpty else { return [] }
        var selects: [String] = []
        var parameters: [(any PostgresEncodable)?] = [userID]
        for window in windows {
            let start = "$\(parameters.count + 1)::timestamptz"
            let end = "$\(parameters.count + 2)::timestamptz"
            parameters.append(window.start)
            parameters.append(window.end)
            let filter = "(\(start) IS NULL OR created_at >= \(start)) AND (\(end) IS NULL OR created_at < \(end))"
            selects.append("count(*) FILTER (WHERE \(filter)), COALESCE(sum(carb_estimate) FILTER (WHERE \(filter)), 0)")
        }
        let rows = try await db.query("SELECT \(selects.joined(separator: ", ")) FROM meals WHERE user_id = $1", parameters)
        let row = rows[rows.startIndex]
        return try windows.indices.map { index in
            MealSummary(mealCount: try row.decode(index * 2), totalCarbs: try row.decode(index * 2 + 1))
        }
    }

    /// The meals with the most and the fewest carbs in [start, end).
    package func extremes(userID: String, start: Date, end: Date) async throws -> (highest: Meal?, lowest: Meal?) {
        let rows = try await db.query(
            """
            (SELECT \(Meal.columns), 'high' AS which FROM meals WHERE user_id = $1 AND created_at >= $2 AND created_at < $3
             ORDER BY carb_estimate DESC, created_at DESC LIMIT 1)
            UNION ALL
            (SELECT \(Meal.columns), 'low' AS which FROM meals WHERE user_id = $1 AND created_at >= $2 AND created_at < $3
             ORDER BY carb_estimate ASC, created_at DESC LIMIT 1)
            """,
            [userID, start, end]
        )
        var highest: Meal?
        var lowest: Meal?
        for row in rows {
            if try row.decode("which", as: String.self) == "high" { highest = try Meal(row: row) } else { lowest = try Meal(row: row) }
        }
        return (highest, lowest)
    }
}

/// A meal written by an analysis job: once per job id, however often the job is delivered.
package struct AnalyzedMeal: Sendable, Equatable {
    package var name: String
    package var carbEstimate: Double
    package var confidenceLow: Double
    package var confidenceHigh: Double
    package var confidenceLevel: Double
    package var analysis: String

    package init(
        name: String, carbEstimate: Double, confidenceLow: Double, confidenceHigh: Double, confidenceLevel: Double, analysis: String
    ) {
        self.name = name
        self.carbEstimate = carbEstimate
        self.confidenceLow = confidenceLow
        self.confidenceHigh = confidenceHigh
        self.confidenceLevel = confidenceLevel
        self.analysis = analysis
    }
}

/// An analysis job's meal to store.
package struct NewAnalyzedMeal: Sendable, Equatable {
    package var userID: String
    package var jobID: String
    package var photoID: Int64
    package var meal: AnalyzedMeal

    package init(userID: String, jobID: String, photoID: Int64, meal: AnalyzedMeal) {
        self.userID = userID
        self.jobID = jobID
        self.photoID = photoID
        self.meal = meal
    }

    func json(_ n: Int) -> JSONValue {
        [
            "n": .int(n), "user_id": .string(userID), "job_id": .string(jobID), "photo_id": .int(Int(photoID)),
            "name": .string(meal.name), "carb_estimate": .double(meal.carbEstimate), "confidence_low": .double(meal.confidenceLow),
            "confidence_high": .double(meal.confidenceHigh), "confidence_level": .double(meal.confidenceLevel),
            "analysis": .string(meal.analysis),
        ]
    }
}

extension Meals {
    /// Writes each analysis job's meal once per job id, in one statement (one round trip, one commit, atomic on its
    /// own): the worker's group commit (``batchedWriter(_:)``) writes the meals of the analyses that end together with
    /// it. Returns the meals' ids in order (a re-delivered job finds its meal). The scan a photo reserved is charged by
    /// the queue when the job's success is recorded.
    package func insertMany(_ meals: [NewAnalyzedMeal]) async throws -> [Int64] {
        guard !meals.isEmpty else { return [] }
        let input = JSONValue.array(meals.enumerated().map { $1.json($0) })
        let rows = try await db.query(
            """
            WITH input AS (
                SELECT * FROM jsonb_to_recordset($1::jsonb) AS t(n int, user_id text, job_id uuid, photo_id bigint, name text,
                    carb_estimate double precision, confidence_low double precision, confidence_high double precision,
                    confidence_level double precision, analysis text)
            ), inserted AS (
                INSERT INTO meals (user_id, job_id, photo_id, name, carb_estimate, confidence_low, confidence_high,
                                   confidence_level, analysis)
                SELECT user_id, job_id, photo_id, name, carb_estimate, confidence_low, confidence_high, confidence_level, analysis
                FROM input ORDER BY n
                ON CONFLICT (job_id) DO NOTHING RETURNING id, job_id
            )
            SELECT i.n, (SELECT id FROM inserted s WHERE s.job_id = i.job_id) AS id
            FROM input i ORDER BY i.n
            """,
            [input.jsonString])
        var ids: [Int64?] = try rows.map { try $0.decode("id") }
        guard ids.count == meals.count else { throw StoreError("\(meals.count) meals stored as \(ids.count) rows") }
        // Re-deliveries (or twins still running): their meals exist, committed after this statement's snapshot perhaps.
        try await JobRows.fillMissing(&ids, jobIDs: meals.map(\.jobID), in: "meals", db)
        return try zip(meals, ids).map { meal, id in
            guard let id else { throw StoreError("meal of job \(meal.jobID) was neither inserted nor found") }
            return id
        }
    }

    /// The worker's group commit of analysed meals (see ``GroupCommit``).
    package static func batchedWriter(_ database: PostgresClient) -> GroupCommit<NewAnalyzedMeal, Int64> {
        GroupCommit(database: database) { meals, database in try await Meals(database).insertMany(meals) }
    }
}
