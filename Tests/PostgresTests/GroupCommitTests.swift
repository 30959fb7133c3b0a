import Postgres
import Synchronization
import Testing

/// `GroupCommit` on the real Postgres: a lone write goes at once and alone, writes that arrive while one is being
/// written share the next statement, a bad row fails only its own caller, and an outage fails the batch once.
@Suite struct GroupCommitTests {
    struct Row: Sendable, Equatable {
        var key: Int
        var grams: Int
    }

    /// Inserts the rows in one statement and returns their ids, in order.
    static func insert(_ rows: [Row], _ db: PostgresClient) async throws -> [Int64] {
        let keys = "{" + rows.map { String($0.key) }.joined(separator: ",") + "}"
        let grams = "{" + rows.map { String($0.grams) }.joined(separator: ",") + "}"
        return try await db.query(
            """
            INSERT INTO portions (key, grams) SELECT k, g FROM unnest($1::int[], $2::int[]) WITH ORDINALITY AS t(k, g, n)
            ORDER BY n RETURNING id
            """, [keys, grams]
        ).map { try $0.decode("id") }
    }

    static func withPortions(_ body: @Sendable (PostgresClient) async throws -> Void) async throws {
        try await TestDatabase.withSchema(poolSize: 2) { db, _ in
            try await db.executeScript(
                "CREATE TABLE portions (id bigserial PRIMARY KEY, key int UNIQUE, grams int NOT NULL CHECK (grams >= 0))")
            try await body(db)
        }
    }

    /// A writer whose batch starting with key 0 waits in its statement until `rows` all wait behind it, and their tasks.
    /// `write` is what the writer does with each batch (after the wait).
    static func arriving(
        _ rows: [Row], on db: PostgresClient, write: @escaping GroupCommit<Row, Int64>.Write = { try await insert($0, $1) }
    ) async throws -> (writer: GroupCommit<Row, Int64>, held: Task<Int64, any Error>, rows: [Task<Int64, any Error>]) {
        let gate = Gate()
        let writer = GroupCommit<Row, Int64>(database: db) { batch, db in
            if batch.first?.key == 0 { await gate.wait() }
            return try await write(batch, db)
        }
        let held = Task { try await writer.submit(Row(key: 0, grams: 1)) }
        while writer.stats.batches == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let tasks = rows.map { row in Task { try await writer.submit(row) } }
        while writer.waiting < rows.count { try await Task.sleep(for: .milliseconds(5)) }
        gate.open()
        return (writer, held, tasks)
    }

    @Test(.timeLimit(.minutes(1)))
    func aLoneWriteGoesAtOnceAndAlone() async throws {
        try await Self.withPortions { db in
            let writer = GroupCommit<Row, Int64>(database: db) { try await Self.insert($0, $1) }
            let first = try await writer.submit(Row(key: 1, grams: 10))
            let second = try await writer.submit(Row(key: 2, grams: 20))
            #expect(second > first)
            #expect(writer.stats == .init(batches: 2, items: 2, largest: 1))
        }
    }

    /// While the first batch is held in its statement, 20 callers arrive: they go together, as the second batch, and
    /// each gets its own row's id.
    @Test(.timeLimit(.minutes(1)))
    func writesArrivingDuringAWriteShareTheNextStatement() async throws {
        try await Self.withPortions { db in
            let (writer, held, others) = try await Self.arriving((1...20).map { Row(key: $0, grams: $0) }, on: db)
            _ = try await held.value
            for (key, task) in zip(1..., others) {
                let id = try await task.value
                let grams = try await db.query("SELECT grams FROM portions WHERE id = $1", [id])[0].decode("grams", as: Int.self)
                #expect(grams == key)
            }
            #expect(writer.stats == .init(batches: 2, items: 21, largest: 20))
        }
    }

    /// A row the table refuses fails its batch's statement; the batch is written again row by row, so only that caller
    /// fails and its neighbours' rows are stored.
    @Test(.timeLimit(.minutes(1)))
    func aBadRowFailsOnlyItsOwnCaller() async throws {
        try await Self.withPortions { db in
            let rows = [Row(key: 1, grams: 5), Row(key: 2, grams: -5), Row(key: 3, grams: 7)]
            let (writer, held, others) = try await Self.arriving(rows, on: db)
            _ = try await held.value
            _ = try await others[0].value
            await #expect(throws: PostgresError.self) { try await others[1].value }
            _ = try await others[2].value
            let keys = try await db.query("SELECT key FROM portions ORDER BY key").map { try $0.decode("key", as: Int.self) }
            #expect(keys == [0, 1, 3])
            // The held one, the batch of three, then each of the three alone.
            #expect(writer.stats == .init(batches: 5, items: 7, largest: 3))
        }
    }

    /// Postgres unreachable: every caller of the batch gets the error, without one more attempt per row.
    @Test(.timeLimit(.minutes(1)))
    func anOutageFailsTheBatchOnce() async throws {
        try await Self.withPortions { db in
            let (writer, held, others) = try await Self.arriving((1...4).map { Row(key: $0, grams: $0) }, on: db) { _, _ in
                throw PostgresError(.connection, "connect to 127.0.0.1:1: connection refused")
            }
            await #expect(throws: PostgresError.self) { try await held.value }
            for task in others { await #expect(throws: PostgresError.self) { try await task.value } }
            #expect(writer.stats == .init(batches: 2, items: 5, largest: 4))
        }
    }
}

/// Holds a write until the test opens it.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resume = state.withLock { state in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resume { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
