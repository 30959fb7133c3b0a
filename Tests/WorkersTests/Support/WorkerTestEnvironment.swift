import Foundation
import Logging
import OutboundHTTP
import Postgres
import Queue
import Redis
import Store
import TestSupport
import Workers

/// The real Postgres (a fresh migrated schema in `carbscan_test`) and Redis (a key prefix of its own) for one
/// test, the project's job catalog (`jobs/`), and workers with the project's handlers.
struct WorkerTestEnvironment: Sendable {
    let database: PostgresClient
    let redis: RedisClient
    let queue: JobQueue
    let prefix: String
    let http: HTTPClient
    let schema: String
    private let admin: PostgresClient

    static var logger: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    static func databaseConfiguration() throws -> PostgresConfiguration {
        var configuration = try PostgresConfiguration(
            url: TestServices.databaseURL)
        configuration.database = "carbscan_test"
        return configuration
    }

    /// Runs `body` with a fresh environment and removes everything it made afterwards.
    static func run<T: Sendable>(poolSize: Int = 4, _ body: @Sendable (WorkerTestEnvironment) async throws -> T) async throws -> T {
        let environment = try await WorkerTestEnvironment(poolSize: poolSize)
        do {
            let result = try await body(environment)
            await environment.cleanUp()
            return result
        } catch {
            await environment.cleanUp()
            throw error
        }
    }

    private init(poolSize: Int) async throws {
        schema = "w_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        admin = PostgresClient(configuration: try Self.databaseConfiguration(), logger: Self.logger)
        try await admin.executeScript("CREATE SCHEMA \(schema)")
        var configuration = try Self.databaseConfiguration()
        configuration.searchPath = schema
        configuration.poolSize = poolSize
        database = PostgresClient(configuration: configuration, logger: Self.logger)
        try await Schema.migrate(database, logger: Self.logger)
        redis = try RedisClient(url: TestServices.redisURL, logger: Self.logger)
        prefix = "test-workers-\(schema)"
        let catalog = try JobCatalog.load(directory: TestServices.repositoryRoot.appendingPathComponent("jobs").path)
        queue = JobQueue(redis: redis, catalog: catalog, options: QueueOptions(prefix: prefix))
        http = HTTPClient(options: HTTPClientOptions(connectTimeout: .seconds(2), totalTimeout: .seconds(5)), logger: Self.logger)
    }

    func services(_ settings: WorkerSettings) -> WorkerServices {
        WorkerServices(
            redis: redis, prefix: prefix, catalog: queue.catalog, database: database, http: http, settings: settings, logger: Self.logger)
    }

    /// A worker with every handler, serving `queues` (default: all), until `stop()`.
    func startWorker(settings: WorkerSettings, queues: [String]? = nil, concurrency: Int = 4) -> (Worker, Task<Void, any Error>) {
        var options = WorkerOptions(
            queues: (queues ?? queue.catalog.queues).map { ($0, 1) }, concurrency: concurrency, gracePeriod: .seconds(2),
            blockTimeout: .seconds(1), promoteInterval: .milliseconds(100), reclaimInterval: .milliseconds(200))
        options.settlingQuota(database: database, queue: queue, logger: Self.logger)
        let worker = Worker(queue: queue, registry: Handlers.registry(services: services(settings)), options: options, logger: Self.logger)
        return (worker, Task { try await worker.run() })
    }

    /// Creates a user directly in the store.
    @discardableResult
    func createUser(id: String = UUID().uuidString.lowercased(), email: String? = nil, tier: Tier = .free) async throws -> User {
        let user = try await Users(database).create(id: id, email: email, emailVerified: email != nil, firstName: "Test", lastName: nil)
        if tier != .free {
            try await database.execute("UPDATE users SET subscription_tier = $2 WHERE id = $1", [id, tier.rawValue])
        }
        return try await Users(database).find(id: id) ?? user
    }

    private func cleanUp() async {
        http.shutdown()
        database.shutdown()
        try? await admin.executeScript("DROP SCHEMA \(schema) CASCADE")
        admin.shutdown()
        _ = try? await redis.unlinkKeys(matching: "\(prefix):*")
        redis.close()
    }
}
