import Logging
import Synchronization
import Traces

/// A pool of PostgreSQL connections, each owned by its own thread. Safe to share across tasks.
///
/// Callers queue (in order) for a free connection; a transaction holds its connection until it commits or rolls
/// back, so a transaction must not wait on the client itself for more connections than the pool has.
/// A connection found broken fails the call that hit it with `.connection` and is reconnected (with capped
/// exponential backoff) for the next one.
package final class PostgresClient: PostgresQueryable {
    package let configuration: PostgresConfiguration
    private let threads: [ConnectionThread]
    private let pool: Mutex<Pool>
    private let logger: Logger

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<ConnectionThread, any Error>
    }

    private struct Pool {
        var idle: [ConnectionThread]
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var closed = false
    }

    /// Starts the connection threads; connections open on first use, so this never fails or blocks.
    package init(configuration: PostgresConfiguration, logger: Logger = Logger(label: "postgres")) {
        self.configuration = configuration
        self.logger = logger
        // Before any connection thread starts: setenv must not race libpq's getenv in a connect.
        if configuration.pooler != nil { _ = PostgresConnection.sendPoolerStartupParameters }
        let threads = (0..<max(1, configuration.poolSize)).map {
            ConnectionThread(name: "postgres-\($0)", configuration: configuration, logger: logger)
        }
        self.threads = threads
        // Handed out from the end: under light load the same few connections stay warm.
        self.pool = Mutex(Pool(idle: threads.reversed()))
    }

    deinit {
        for thread in threads { thread.close() }
    }

    /// Closes the connections once their queued statements finished; later calls throw `.closed`.
    package func shutdown() {
        let waiters = pool.withLock { pool in
            pool.closed = true
            defer { pool.waiters.removeAll() }
            return pool.waiters
        }
        for waiter in waiters { waiter.continuation.resume(throwing: Self.closedError) }
        for thread in threads { thread.close() }
    }

    package func query(_ sql: String, _ parameters: [(any PostgresEncodable)?]) async throws -> PostgresRows {
        let parameters = parameters.map(EncodedParameter.init)
        if TraceSwitch.inSampledStatementTrace {
            return try await StatementSpan.traced(sql, configuration) { try await run(sql, parameters) }
        }
        return try await run(sql, parameters)
    }

    private func run(_ sql: String, _ parameters: [EncodedParameter]) async throws -> PostgresRows {
        try await withThread { thread in
            try await thread.run { connection throws(PostgresError) in
                try connection.ensureConnected()
                defer { connection.rollbackLeftoverTransaction() }
                return try connection.query(sql, parameters)
            }
        }
    }

    @discardableResult
    package func execute(_ sql: String, _ parameters: [(any PostgresEncodable)?]) async throws -> Int {
        try await query(sql, parameters).affectedRows
    }

    /// Runs `body` in `BEGIN` … `COMMIT` on one connection; `ROLLBACK` when it throws (and rethrows).
    /// A connection that breaks inside fails the transaction with `.connection` and is reconnected afterwards.
    @discardableResult
    package func transaction<T: Sendable>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresTransaction) async throws -> T
    ) async throws -> T {
        try await withPinnedConnection { connection in try await connection.transaction(body) }
    }

    /// Runs several statements with the simple-query protocol (no parameters): for migrations and test set-up only.
    package func executeScript(_ sql: String) async throws {
        try await withThread { thread in
            try await thread.run { connection throws(PostgresError) in
                try connection.ensureConnected()
                defer { connection.rollbackLeftoverTransaction() }
                try connection.script(sql)
            }
        }
    }

    /// Holds one connection for `body` (and so the session state it builds up), then returns it to the pool.
    func withPinnedConnection<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PinnedConnection) async throws -> T
    ) async throws -> T {
        try await withThread { thread in
            let connection = try await PinnedConnection.pin(thread)
            return try await body(connection)
        }
    }

    private func withThread<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (ConnectionThread) async throws -> T
    ) async throws -> T {
        let thread = try await acquire()
        PostgresConnectionStats.busyCount.wrappingAdd(1, ordering: .relaxed)
        defer {
            PostgresConnectionStats.busyCount.wrappingSubtract(1, ordering: .relaxed)
            release(thread)
        }
        return try await body(thread)
    }

    private static var closedError: PostgresError { PostgresError(.closed, "the Postgres client was shut down") }

    private func acquire() async throws -> ConnectionThread {
        if let thread = pool.withLock({ pool in pool.closed ? nil : pool.idle.popLast() }) { return thread }
        // Every connection is lent: queued, and counted (`carbscan_postgres_pool_waits_total`, `…_wait_seconds_total`).
        let start = ContinuousClock.now
        defer {
            let waited = (ContinuousClock.now - start).components
            PostgresConnectionStats.waitCount.wrappingAdd(1, ordering: .relaxed)
            PostgresConnectionStats.waitMicroseconds.wrappingAdd(
                Int(waited.seconds) * 1_000_000 + Int(waited.attoseconds / 1_000_000_000_000), ordering: .relaxed)
        }
        return try await queue()
    }

    /// Waits in line for a connection (or takes one freed meanwhile).
    private func queue() async throws -> ConnectionThread {
        let id = pool.withLock { pool in
            pool.nextWaiterID += 1
            return pool.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ConnectionThread, any Error>) in
                let outcome = pool.withLock { pool -> Result<ConnectionThread, any Error>? in
                    if pool.closed { return .failure(Self.closedError) }
                    if let thread = pool.idle.popLast() { return .success(thread) }
                    // Checked under the lock: a cancellation handler that ran before this point found no waiter to fail.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    pool.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = pool.withLock { pool -> Waiter? in
                guard let index = pool.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return pool.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Hands the connection straight to the longest waiter, or back to the idle list.
    private func release(_ thread: ConnectionThread) {
        let waiter = pool.withLock { pool -> Waiter? in
            if !pool.waiters.isEmpty { return pool.waiters.removeFirst() }
            pool.idle.append(thread)
            return nil
        }
        waiter?.continuation.resume(returning: thread)
    }
}
