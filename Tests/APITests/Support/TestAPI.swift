import API
import Accounts
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Mail
import OutboundHTTP
import Postgres
import Push
import Queue
import Redis
import Settings
import Store
import TestSupport
import Workers
import carbscan

/// The API on the real Postgres and Redis, isolated per test: a fresh schema (migrated) in `carbscan_test`, a
/// Redis key prefix of its own, and a local JWKS server standing in for Apple and Clerk.
struct TestAPI: Sendable {
    static let appleClientID = "com.carbscan.test"
    static let appleIssuer = "https://appleid.apple.com"
    static let jwtSecret = Array("test-secret-test-secret-test-secret-0123456789".utf8)

    let database: PostgresClient
    let queue: JobQueue
    let dependencies: APIDependencies
    let routes: [(method: String, path: String)]
    let appleKeys: IdentityKeys
    let clerkKeys: IdentityKeys
    let jwks: JWKSServer
    /// The settings the API was made with, for `otherProcess`.
    let environment: [String: String]
    /// With `run(faults: true)`: the proxies the API reaches Redis and Postgres through, to cut them.
    let redisProxy: FaultProxy?
    let postgresProxy: FaultProxy?
    /// With `replica:`: the read replica the API reads from, its health checked every 100 ms.
    let replicas: PostgresReadReplicas?

    var clerkIssuer: String { "http://127.0.0.1:\(jwks.port)/clerk" }

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

    /// Runs `body` against the API's router; everything the test made is dropped afterwards.
    /// - Parameters:
    ///   - apple: configure Sign in with Apple (`APPLE_CLIENT_ID`).
    ///   - environment: extra settings as the process environment would give them (`LOGIN_MAX_FAILURES`, …).
    ///   - live: serve on a real loopback port (needed where the client address matters).
    ///   - faults: reach Redis and Postgres through `FaultProxy`s (`redisProxy`, `postgresProxy`) to cut.
    ///   - redisURL: the single Redis, or the cluster (`TestServices.clusterURL`).
    ///   - replica: a read replica's URL (`TestServices.replicaURL`, or one where none listens) and its options: the
    ///     API reads from it (`DATABASE_READ_URL`), once it has replayed the test's schema when it answers at all.
    static func run<T: Sendable>(
        apple: Bool = true, environment: [String: String] = [:], live: Bool = false, faults: Bool = false,
        redisURL: String = TestServices.redisURL, replica: String? = nil,
        replicaOptions: PostgresReadReplicas.Options = .init(checkInterval: .milliseconds(100)), jobsDirectory: String? = nil,
        _ body: @Sendable (TestAPI, any TestClientProtocol) async throws -> T
    ) async throws -> T {
        await RunLimiter.shared.acquire()
        defer { Task { await RunLimiter.shared.release() } }
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let admin = PostgresClient(configuration: try databaseConfiguration(), logger: logger)
        try await admin.executeScript("CREATE SCHEMA \(schema)")
        var configuration = try databaseConfiguration()
        configuration.searchPath = schema
        configuration.poolSize = 4
        var redisConfiguration = try RedisConfiguration(url: redisURL)
        var redisProxy: FaultProxy?
        var postgresProxy: FaultProxy?
        if faults {
            redisProxy = try await FaultProxy.start(to: redisConfiguration.host, port: redisConfiguration.port)
            postgresProxy = try await FaultProxy.start(to: configuration.host, port: configuration.port)
            redisConfiguration.port = redisProxy!.port
            configuration.port = postgresProxy!.port
            // The proxy shares NIO's singleton loops with every suite of the parallel run; a loaded CI machine once took
            // more than the default 5 s to connect through it, which is not what these tests are about.
            configuration.connectTimeout = .seconds(20)
        }
        defer {
            redisProxy?.stop()
            postgresProxy?.stop()
        }
        let database = PostgresClient(configuration: configuration, logger: logger)
        let redis = RedisClient(configuration: redisConfiguration, logger: logger)
        let prefix = "test-api-\(schema)"
        let appleKeys = try IdentityKeys(kids: ["apple-1"])
        let clerkKeys = try IdentityKeys(kids: ["clerk-1"], poolOffset: 1)
        let jwks = try await JWKSServer.start(apple: appleKeys, clerk: clerkKeys)
        defer {
            jwks.stop()
        }
        do {
            try await Schema.migrate(database, logger: logger)
            let catalog = try JobCatalog.load(directory: jobsDirectory ?? TestServices.repositoryRoot.appendingPathComponent("jobs").path)
            let queue = JobQueue(redis: redis, catalog: catalog, options: QueueOptions(prefix: prefix))
            var env = ["LOGIN_WEBHOOK_URL": "http://127.0.0.1:9/unused", "OIDC_ISSUERS": "http://127.0.0.1:\(jwks.port)/clerk"]
            if apple {
                env["APPLE_CLIENT_ID"] = appleClientID
                env["APPLE_JWKS_URL"] = "http://127.0.0.1:\(jwks.port)/apple/auth/keys"
            }
            env["JWT_SECRET"] = String(decoding: jwtSecret, as: UTF8.self)
            env["BCRYPT_COST"] = "4"
            env["JWKS_MIN_REFETCH_SECONDS"] = "1"
            env.merge(environment) { $1 }
            var dependencies = await APIDependencies.live(
                database: database, queue: queue, settings: try ServeSettings(environment: EnvironmentReader(env)), logger: logger)
            var replicas: PostgresReadReplicas?
            if let replica {
                var replicaConfiguration = try PostgresConfiguration(url: replica)
                replicaConfiguration.database = "carbscan_test"
                let made = PostgresReadReplicas(
                    primary: database, replicas: [replicaConfiguration], options: replicaOptions, logger: logger)
                try await waitForReplay(of: database, on: made.replicas[0].client)
                dependencies.useReadReplicas(made)
                replicas = made
            }
            let health = Task { [replicas] in await replicas?.run() }
            defer {
                health.cancel()
                replicas?.shutdown()
            }
            let (router, routes) = try APIServer.router(dependencies)
            let api = TestAPI(
                database: database, queue: queue, dependencies: dependencies, routes: routes, appleKeys: appleKeys,
                clerkKeys: clerkKeys, jwks: jwks, environment: env, redisProxy: redisProxy, postgresProxy: postgresProxy,
                replicas: replicas)
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
            let waiter = Task { try await dependencies.waiter.run() }
            defer { waiter.cancel() }
            let result = try await app.test(live ? .live : .router) { client in try await body(api, client) }
            await cleanUp(schema: schema, prefix: prefix, admin: admin, database: database, redis: redis)
            return result
        } catch {
            await cleanUp(schema: schema, prefix: prefix, admin: admin, database: database, redis: redis)
            throw error
        }
    }

    /// Waits until `replica` has replayed everything `primary` committed so far (the schema and its migrations too);
    /// at once when it does not answer (a test of a replica that is down).
    static func waitForReplay(of primary: PostgresClient, on replica: PostgresClient) async throws {
        let target = try await PostgresLSN.current(on: primary)
        guard (try? await replica.query("SELECT 1")) != nil else { return }
        let replayed = try await eventually(timeout: .seconds(30)) {
            // A replica may cancel a session that conflicts with what it replays: that read is "not yet", not a failure.
            let rows = try? await replica.query("SELECT pg_last_wal_replay_lsn()::text AS lsn")
            let text: String? = try rows?.first?.decode("lsn")
            return text.flatMap(PostgresLSN.parse).map { $0 >= target } ?? false
        }
        guard replayed else { throw TestSetupError("the replica did not replay the primary's position within 30 s") }
    }

    /// Runs `body` against a second API process on the same database and Redis prefix, with caches of its own,
    /// once its event subscription is up. That subscription is renewed only every minute (each renewal empties
    /// the session cache, which would hide whether a message arrived).
    func otherProcess<T: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        var dependencies = await APIDependencies.live(
            database: database, queue: queue, settings: try ServeSettings(environment: EnvironmentReader(environment)), logger: Self.logger)
        dependencies.waiter = JobWaiter(
            queue: queue, sessions: dependencies.accounts.sessions, logger: Self.logger, idleRenewal: .seconds(60))
        let app = Application(
            router: try APIServer.router(dependencies).router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: Self.logger)
        let waiter = Task { [dependencies] in try await dependencies.waiter.run() }
        defer { waiter.cancel() }
        // Both processes listen once the channel counts two subscribers (this test's own one is never renewed away).
        let channel = JobWaiter.sessionChannel(prefix: queue.options.prefix)
        let subscribed = try await eventually {
            try await queue.redis.send(["PUBSUB", "SHARDNUMSUB", channel]).array?.last?.int == 2
        }
        guard subscribed else { throw TestSetupError("the second API process never subscribed to \(channel)") }
        return try await app.test(.router) { client in try await body(client) }
    }

    private static func cleanUp(schema: String, prefix: String, admin: PostgresClient, database: PostgresClient, redis: RedisClient) async {
        database.shutdown()
        try? await admin.executeScript("DROP SCHEMA \(schema) CASCADE")
        admin.shutdown()
        _ = try? await redis.unlinkKeys(matching: "\(prefix):*")
        redis.close()
    }

    // MARK: Accounts made for tests

    struct Account: Sendable {
        var id: String
        var email: String
        var accessToken: String
        var refreshToken: String
    }

    /// Registers an email/password account through the API.
    func register(
        _ client: any TestClientProtocol, email: String = "user-\(UUID().uuidString.prefix(8).lowercased())@example.com",
        password: String = "correct horse"
    ) async throws -> Account {
        let response = try await client.call(.post, "auth/register", json: ["email": email, "password": password, "name": "Test User"])
        guard response.status == 201 else { throw TestFailure("register answered \(response.status): \(response.text)") }
        let data = response.json["data"]
        return Account(
            id: data["user"]["id"].string ?? "", email: email, accessToken: data["accessToken"].string ?? "",
            refreshToken: data["refreshToken"].string ?? "")
    }

    /// A worker in this process running every handler on the API's Postgres and Redis, serving `queue` until it is
    /// stopped; its HTTP client (for `settings`' providers) closes when the task ends.
    func startWorker(
        queue name: String, settings: WorkerSettings = WorkerSettings(), concurrency: Int = 4, mailer: SMTPMailer? = nil,
        alsoServing others: [String] = [], push: APNsClient? = nil, observers: [any WorkerObserver] = []
    ) -> (Worker, Task<Void, any Error>) {
        let http = HTTPClient(logger: TestAPI.logger)
        let services = WorkerServices(
            redis: queue.redis, prefix: queue.options.prefix, catalog: queue.catalog, database: database, http: http,
            settings: settings, logger: TestAPI.logger, mailer: mailer, push: push)
        var options = WorkerOptions(
            queues: ([name] + others).map { ($0, 1) }, concurrency: concurrency, gracePeriod: .seconds(1), blockTimeout: .seconds(1),
            promoteInterval: .milliseconds(100))
        options.observers = observers
        options.settlingQuota(database: database, queue: queue, logger: TestAPI.logger)
        let worker = Worker(queue: queue, registry: Handlers.registry(services: services), options: options, logger: TestAPI.logger)
        return (
            worker,
            Task {
                defer { http.shutdown() }
                try await worker.run()
            }
        )
    }

    /// Sets a user's tier directly in the store (subscriptions come from the provider in a later issue).
    func setTier(_ tier: Tier, userID: String) async throws {
        try await database.execute("UPDATE users SET subscription_tier = $2 WHERE id = $1", [userID, tier.rawValue])
    }

    /// Inserts a meal directly, `createdAt` as given.
    @discardableResult
    func insertMeal(userID: String, name: String = "Meal", carbs: Double, at date: Date) async throws -> Int64 {
        let rows = try await database.query(
            "INSERT INTO meals (user_id, name, carb_estimate, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING id",
            [userID, name, carbs, date])
        return try rows[rows.startIndex].decode("id")
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

struct TestSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
