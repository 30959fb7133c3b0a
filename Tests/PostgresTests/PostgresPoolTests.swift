import Foundation
import Postgres
import Synchronization
import Testing

@Suite struct PostgresPoolTests {
    /// Ten callers share two connections: every one is served, none deadlocks, and no third backend appears.
    @Test(.timeLimit(.minutes(1)))
    func aSmallPoolServesManyConcurrentCallers() async throws {
        try await TestDatabase.withSchema(poolSize: 2) { db, _ in
            let pids = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        try await db.query("SELECT pg_backend_pid() AS pid, pg_sleep(0.2)")[0].decode("pid", as: Int.self)
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(pids.count == 10)
            #expect(Set(pids).count == 2)
        }
    }

    /// Four statements block inside the server at once. Were they blocking the (two-thread) cooperative pool, this
    /// test could not go on to observe them and release the lock they wait for: it would hang.
    @Test(.timeLimit(.minutes(1)))
    func blockingCallsStayOffTheCooperativePool() async throws {
        try await TestDatabase.withSchema(poolSize: 4) { db, schema in
            let key = Int.random(in: 1...Int(Int32.max))
            let observer = try schema.client(poolSize: 1)
            defer { observer.shutdown() }
            try await TestDatabase.withAdmin { admin in
                let waiters = try await admin.transaction { holder in
                    try await holder.execute("SELECT pg_advisory_xact_lock($1)", [key])
                    let waiters = (0..<4).map { _ in
                        Task { try await db.query("SELECT pg_backend_pid() AS pid, pg_advisory_xact_lock_shared($1)", [key]) }
                    }
                    while try await observer.query(
                        "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
                        [schema.name])[0].decode("n", as: Int.self) < 4
                    {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    return waiters
                }
                // The holder committed: the lock is free, and all four finish, each on its own connection.
                var pids: Set<Int> = []
                for waiter in waiters { pids.insert(try await waiter.value[0].decode("pid")) }
                #expect(pids.count == 4)
            }
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aCallerWaitingForAConnectionCanBeCancelled() async throws {
        try await TestDatabase.withSchema(poolSize: 1) { db, _ in
            let holding = Mutex(false)
            try await db.transaction { tx in
                try await tx.execute("SELECT 1")
                let waiter = Task {
                    try await db.query("SELECT 1")  // waits: the only connection is in this transaction
                }
                try await Task.sleep(for: .milliseconds(100))
                waiter.cancel()
                await #expect(throws: CancellationError.self) { try await waiter.value }
                holding.withLock { $0 = true }
            }
            #expect(holding.withLock { $0 })
            #expect(try await db.query("SELECT 7 AS n")[0].decode("n", as: Int.self) == 7)
        }
    }
}
