import ArgumentParser
import Foundation
import Logging
import Postgres
import Queue
import Redis
import Settings
import Store

/// Options every subcommand shares. Each falls back to an environment variable, then to a local default
/// that matches `ops/services.sh`.
struct GlobalOptions: ParsableArguments {
    @Option(help: "Redis URL, redis://[:password@]host:port/db (env REDIS_URL).")
    var redisURL: String = EnvironmentReader.process.text("REDIS_URL") ?? "redis://127.0.0.1:56379/0"

    @Option(help: "Postgres URL, postgres://user[:password]@host:port/db (env DATABASE_URL).")
    var databaseURL: String = EnvironmentReader.process.text("DATABASE_URL") ?? Self.localDatabaseURL

    /// `ops/services.sh`'s database: what a process uses when neither `DATABASE_URL` nor `--database-url` names one.
    static let localDatabaseURL = "postgres://postgres@127.0.0.1:55432/carbscan"

    /// Whether a database was named (`DATABASE_URL` or `--database-url`), rather than the local default assumed.
    var namesDatabase: Bool {
        EnvironmentReader.process.text("DATABASE_URL") != nil || databaseURL != Self.localDatabaseURL
    }

    @Option(help: "Folder of the job kind files (env CARBSCAN_JOBS_DIR).")
    var jobsDir: String = EnvironmentReader.process.text("CARBSCAN_JOBS_DIR") ?? "jobs"

    @Option(help: "Prefix of every Redis key (env CARBSCAN_PREFIX).")
    var prefix: String = EnvironmentReader.process.text("CARBSCAN_PREFIX") ?? "carbscan"

    @Option(
        help: """
            Replicas that must acknowledge an enqueue before it succeeds (WAIT; 0: off). Past the timeout the enqueue \
            fails (503 through the API) though the job was written (env CARBSCAN_DURABLE_ENQUEUE; default 0).
            """)
    var durableEnqueue: Int?

    @Option(help: "How long a durable enqueue waits for its replicas, in ms (env CARBSCAN_DURABLE_TIMEOUT_MS; default 1000).")
    var durableTimeoutMs: Int?

    static let durableReplicasRange = 0...16
    static let durableTimeoutRange = 1...60_000

    func validate() throws {
        if let durableEnqueue, !Self.durableReplicasRange.contains(durableEnqueue) {
            throw ValidationError("--durable-enqueue must be 0…16 replicas")
        }
        if let durableTimeoutMs, !Self.durableTimeoutRange.contains(durableTimeoutMs) {
            throw ValidationError("--durable-timeout-ms must be 1…60000")
        }
        // A hash tag in the prefix would put every queue in one Redis Cluster slot (one node).
        if prefix.isEmpty || prefix.contains("{") || prefix.contains("}") {
            throw ValidationError("--prefix (CARBSCAN_PREFIX) must be non-empty and hold no { or }: '\(prefix)'")
        }
    }

    /// Replicas a durable enqueue waits for: the option, else `CARBSCAN_DURABLE_ENQUEUE` (refused when set but wrong).
    func durableReplicas() throws(SettingError) -> Int {
        try setting(durableEnqueue, "CARBSCAN_DURABLE_ENQUEUE", default: 0, in: Self.durableReplicasRange)
    }

    /// How long a durable enqueue waits, in ms: the option, else `CARBSCAN_DURABLE_TIMEOUT_MS`.
    func durableTimeout() throws(SettingError) -> Int {
        try setting(durableTimeoutMs, "CARBSCAN_DURABLE_TIMEOUT_MS", default: 1000, in: Self.durableTimeoutRange)
    }

    /// An option's value when given, else its variable's (refused when set but wrong), else the default.
    private func setting(_ option: Int?, _ variable: String, default fallback: Int, in range: ClosedRange<Int>) throws(SettingError)
        -> Int
    {
        if let option { return option }
        return try EnvironmentReader.process.integer(variable, default: fallback, in: range)
    }

    /// The queue's options: the prefix, and the durable enqueue when asked for.
    func queueOptions() throws(SettingError) -> QueueOptions {
        var options = QueueOptions(prefix: prefix)
        // Both read, so a wrong timeout is refused even while durable enqueue is off.
        let (replicas, timeout) = (try durableReplicas(), try durableTimeout())
        if replicas > 0 { options.durability = Durability(replicas: replicas, timeout: .milliseconds(timeout)) }
        return options
    }

    /// Loads the catalog or stops with the file, line and reason.
    func catalog() throws -> JobCatalog {
        do {
            return try JobCatalog.load(directory: jobsDir)
        } catch {
            throw CLIError("invalid job configuration: \(error)", exitCode: 78)
        }
    }

    func redis(logger: Logger) throws -> RedisClient {
        do {
            return try RedisClient(url: redisURL, logger: logger)
        } catch {
            throw CLIError("\(error.message)", exitCode: 64)
        }
    }

    /// - Parameter genericPlans: prepared statements keep their generic plan (`PostgresConfiguration.genericPlans`).
    func database(logger: Logger, poolSize: Int = 8, genericPlans: Bool = false) throws -> PostgresClient {
        try Self.client(url: databaseURL, logger: logger, poolSize: poolSize, genericPlans: genericPlans)
    }

    /// The connection migrations run on: `DATABASE_MIGRATION_URL`, else the database's. Their advisory lock is
    /// session state, so behind a transaction pooler this must name PostgreSQL itself (the migrator refuses a pooler).
    func migrationDatabase(logger: Logger) throws -> PostgresClient {
        try Self.client(url: migrationDatabaseURL, logger: logger, poolSize: 1)
    }

    var migrationDatabaseURL: String { EnvironmentReader.process.text("DATABASE_MIGRATION_URL") ?? databaseURL }

    /// A client for `url`, in the pooler mode `DATABASE_POOLER` names when set (it overrides the URL's `pooler=`).
    private static func client(url: String, logger: Logger, poolSize: Int, genericPlans: Bool = false) throws -> PostgresClient {
        do {
            var configuration = try PostgresConfiguration(url: url)
            configuration.poolSize = poolSize
            configuration.genericPlans = genericPlans
            if let pooler = EnvironmentReader.process.text("DATABASE_POOLER") {
                configuration.pooler = try PostgresPooler(setting: pooler)
            }
            return PostgresClient(configuration: configuration, logger: logger)
        } catch {
            throw CLIError("\(error)", exitCode: 64)
        }
    }

    /// Applies the pending migrations over `migrationDatabase`, then closes that connection.
    func migrate(logger: Logger) async throws {
        let database = try migrationDatabase(logger: logger)
        defer { database.shutdown() }
        try await Schema.migrate(database, logger: logger)
    }

    func jobQueue(logger: Logger) throws -> JobQueue {
        JobQueue(redis: try redis(logger: logger), catalog: try catalog(), options: try queueOptions())
    }
}

/// A refusal with a message for the operator and a non-zero exit code.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32

    init(_ message: String, exitCode: Int32 = 1) {
        self.description = message
        self.exitCode = exitCode
    }
}

/// Runs a command body, turning refusals and unreachable services into one clear line on stderr and an exit code.
func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as CLIError {
        FileHandle.standardError.write(Data("error: \(error.description)\n".utf8))
        throw ExitCode(error.exitCode)
    } catch let error as SettingError {
        FileHandle.standardError.write(Data("error: configuration: \(error)\n".utf8))
        throw ExitCode(78)
    } catch let error as QueueError {
        FileHandle.standardError.write(Data("error: \(error.message)\n".utf8))
        throw ExitCode(error.code == .notFound ? 4 : 65)
    } catch let error as RedisError {
        FileHandle.standardError.write(Data("error: \(error.description)\n".utf8))
        throw ExitCode(error.isTransient ? 69 : 1)
    } catch let error as PostgresError {
        FileHandle.standardError.write(Data("error: Postgres: \(error.description)\n".utf8))
        // A refused URL (a pooler where a session is needed) is the operator's to fix, as a malformed one is: 64.
        throw ExitCode(error.code == .connection || error.code == .timeout ? 69 : error.code == .invalidURL ? 64 : 1)
    }
}
