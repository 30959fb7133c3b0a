import Logging
import Synchronization

/// Streaming replicas of one primary that read-only statements can run on, each a small `PostgresClient` of its own,
/// and which of them may be read now.
///
/// A replica is usable while its health check (``run()``, every `checkInterval`) finds it answering, in recovery and
/// at most `maxLag` behind the primary. ``reader(after:)`` picks one round-robin among the usable replicas that have
/// replayed a given WAL position, else the primary: a caller that passes the position of its own last write reads
/// that write. A statement that finds its replica gone runs again on the primary (a read is safe to repeat), so a
/// replica that dies between two checks costs its readers no error.
package final class PostgresReadReplicas: Sendable {
    package struct Options: Sendable {
        /// A replica further behind than this is not read (`DATABASE_READ_MAX_LAG_SECONDS`, default 10).
        package var maxLag: Duration
        /// Connections per replica.
        package var poolSize: Int
        /// How often the primary's WAL position and each replica's state are read.
        package var checkInterval: Duration
        /// A replica whose health check has not answered for this long is down (it may hang rather than refuse).
        package var checkTimeout: Duration
        /// How long connecting to a replica may take (a shorter bound than the primary's: there is a fallback).
        package var connectTimeout: Duration

        package init(
            maxLag: Duration = .seconds(10), poolSize: Int = 4, checkInterval: Duration = .milliseconds(500),
            checkTimeout: Duration = .seconds(2), connectTimeout: Duration = .seconds(2)
        ) {
            self.maxLag = maxLag
            self.poolSize = poolSize
            self.checkInterval = checkInterval
            self.checkTimeout = checkTimeout
            self.connectTimeout = connectTimeout
        }
    }

    /// Where a read went, for `/metrics`.
    package enum Target: String, Sendable, CaseIterable {
        case replica, primary
    }

    /// Why a read went where it went: a replica had replayed what the reader needs (`fresh`), or none had replayed the
    /// reader's own last write (`own_write`), or no replica was usable (`unhealthy`: down, not in recovery, too far behind).
    package enum Reason: String, Sendable, CaseIterable {
        case fresh
        case ownWrite = "own_write"
        case unhealthy
    }

    package let primary: PostgresClient
    package let replicas: [PostgresReplica]
    package let options: Options
    let logger: Logger
    private let nextReplica = Atomic<Int>(0)
    /// The primary's WAL position as the health loop read it, oldest first, over the last few lag bounds: how old a
    /// replica's position is (see `lag(replayed:replayAge:now:)`).
    let primarySamples = Mutex<[(at: ContinuousClock.Instant, lsn: UInt64)]>([])
    /// Reads routed, by `Target` and `Reason` (replica/fresh, primary/own_write, primary/unhealthy).
    private let freshReads = Atomic<Int>(0)
    private let ownWriteReads = Atomic<Int>(0)
    private let unhealthyReads = Atomic<Int>(0)

    /// Makes one client per replica (connections open on first use, so this never blocks); ``run()`` checks them.
    package init(primary: PostgresClient, replicas configurations: [PostgresConfiguration], options: Options = Options(), logger: Logger) {
        self.primary = primary
        self.options = options
        self.logger = logger
        self.replicas = configurations.map { configuration in
            var configuration = configuration
            configuration.poolSize = options.poolSize
            configuration.connectTimeout = options.connectTimeout
            configuration.searchPath = configuration.searchPath ?? primary.configuration.searchPath
            return PostgresReplica(client: PostgresClient(configuration: configuration, logger: logger))
        }
    }

    /// Closes the replicas' connections (not the primary's: its owner closes it).
    package func shutdown() {
        for replica in replicas { replica.client.shutdown() }
    }

    /// Something to run read-only statements on: a usable replica that has replayed `lsn` (any usable one when nil),
    /// taken round-robin, else the primary. Never for writes or transactions: those go to `primary`.
    package func reader(after lsn: UInt64?) -> any PostgresQueryable {
        let now = ContinuousClock.now
        let usable = replicas.filter { $0.isUsable(now: now, staleAfter: options.checkTimeout) }
        guard !usable.isEmpty else {
            unhealthyReads.add(1, ordering: .relaxed)
            return primary
        }
        let fresh = lsn.map { lsn in usable.filter { $0.replayed >= lsn } } ?? usable
        guard !fresh.isEmpty else {
            ownWriteReads.add(1, ordering: .relaxed)
            return primary
        }
        freshReads.add(1, ordering: .relaxed)
        let replica = fresh[nextReplica.wrappingAdd(1, ordering: .relaxed).oldValue % fresh.count]
        return ReplicaReader(replica: replica, replicas: self)
    }

    /// How many reads went where, since the process started.
    package func routedReads(to target: Target, because reason: Reason) -> Int {
        switch (target, reason) {
        case (.replica, .fresh): freshReads.load(ordering: .relaxed)
        case (.primary, .ownWrite): ownWriteReads.load(ordering: .relaxed)
        case (.primary, .unhealthy): unhealthyReads.load(ordering: .relaxed)
        default: 0
        }
    }

    /// The primary's WAL position now: every write committed before this call lies at or before it.
    package func primaryLSN() async throws -> UInt64 {
        try await PostgresLSN.current(on: primary)
    }

    /// A statement whose replica failed it: counted as a read of the primary (`unhealthy`).
    func failedOver(_ replica: PostgresReplica, _ error: PostgresError) {
        unhealthyReads.add(1, ordering: .relaxed)
        if error.isOutage { replica.update(.down("\(error)"), logger: logger, maxLag: options.maxLag) }
    }
}

/// One read replica: its client and the state its last health check found.
package final class PostgresReplica: Sendable {
    package let client: PostgresClient
    private let health = Mutex(PostgresReplicaHealth())

    init(client: PostgresClient) { self.client = client }

    /// Where it is, for logs and metric labels: host, port and database, never the password.
    package var name: String { client.configuration.displayAddress }

    /// What its last health check found.
    package var currentHealth: PostgresReplicaHealth { health.withLock { $0 } }

    /// The WAL position it had replayed at its last check (it has only gone further since).
    var replayed: UInt64 { health.withLock { $0.replayed } }

    func isUsable(now: ContinuousClock.Instant, staleAfter: Duration) -> Bool {
        health.withLock { health in
            guard health.state == .healthy, let checkedAt = health.checkedAt else { return false }
            return now - checkedAt <= staleAfter
        }
    }

    /// Records a check's finding; a change of state is logged once.
    func update(
        _ state: PostgresReplicaHealth.State, replayed: UInt64? = nil, lag: Double? = nil, logger: Logger, maxLag: Duration,
        at now: ContinuousClock.Instant = .now
    ) {
        let previous = health.withLock { health in
            let previous = health.state
            health.state = state
            if let replayed { health.replayed = replayed }
            health.lagSeconds = lag
            if state == .healthy || state == .behind || state == .notInRecovery { health.checkedAt = now }
            return previous
        }
        guard previous.kind != state.kind else { return }
        var metadata: Logger.Metadata = ["replica": "\(name)"]
        if let lag { metadata["lag_seconds"] = "\(lag)" }
        switch state {
        case .healthy:
            logger.info(previous == .unchecked ? "read replica in use" : "read replica back in use", metadata: metadata)
        case .behind:
            metadata["max_lag_seconds"] = "\(Double(maxLag.components.seconds) + Double(maxLag.components.attoseconds) / 1e18)"
            logger.warning("read replica too far behind: not read until it catches up", metadata: metadata)
        case .notInRecovery:
            logger.error("read replica is not in recovery (promoted, or not a replica): not read", metadata: metadata)
        case .down(let reason):
            metadata["error"] = "\(reason)"
            logger.warning("read replica down: not read until it answers again", metadata: metadata)
        case .unchecked:
            break
        }
    }
}

/// A replica as its last health check found it.
package struct PostgresReplicaHealth: Sendable {
    package enum State: Sendable, Equatable {
        /// Not checked yet: not read.
        case unchecked
        case healthy
        /// Answering and in recovery, but further behind than the lag bound.
        case behind
        /// Answering but not a replica in recovery (promoted, or pointed at a primary): reads would be right but the
        /// lag could not be known, so it is not read.
        case notInRecovery
        /// Unreachable, failing, or not answering its check in time (the reason, redacted of any password).
        case down(String)

        /// The state without its reason: a change of kind is what is logged.
        var kind: Int {
            switch self {
            case .unchecked: 0
            case .healthy: 1
            case .behind: 2
            case .notInRecovery: 3
            case .down: 4
            }
        }
    }

    package var state: State = .unchecked
    /// The WAL position it had replayed at the last check that reached it.
    package var replayed: UInt64 = 0
    /// How far behind the primary it was at the last check that reached it (nil: down, or not known).
    package var lagSeconds: Double?
    /// When a check last reached it.
    var checkedAt: ContinuousClock.Instant?

    package var isHealthy: Bool { state == .healthy }
}

/// Statements on one replica; one that finds it unreachable (or cancelled by a replication conflict) runs on the
/// primary instead.
struct ReplicaReader: PostgresQueryable {
    let replica: PostgresReplica
    let replicas: PostgresReadReplicas

    func query(_ sql: String, _ parameters: [(any PostgresEncodable)?]) async throws -> PostgresRows {
        do {
            return try await replica.client.query(sql, parameters)
        } catch let error as PostgresError where Self.failsOver(error) {
            replicas.failedOver(replica, error)
            return try await replicas.primary.query(sql, parameters)
        }
    }

    @discardableResult
    func execute(_ sql: String, _ parameters: [(any PostgresEncodable)?]) async throws -> Int {
        try await query(sql, parameters).affectedRows
    }

    /// The replica, not the statement, failed: unreachable or shut down, or the statement was cancelled because the
    /// replica had to replay a change that conflicted with it (SQLSTATE 40001 on a standby).
    static func failsOver(_ error: PostgresError) -> Bool {
        error.isOutage || error.code == .closed || error.sqlState == "40001"
    }
}
