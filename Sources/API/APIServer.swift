import Accounts
import AppStore
import Foundation
import Hummingbird
import Logging
import Postgres
import Queue
import Redis
import Telemetry
import Traces

/// What the API needs from the rest of the system.
package struct APIDependencies: Sendable {
    package var database: PostgresClient
    /// Where read-only queries go: the primary (`database`), or read replicas that have the reader's writes.
    package var reads: ReadRouting
    package var redis: RedisClient
    package var queue: JobQueue
    /// Wakes requests waiting for jobs; run it as a service next to the application.
    package var waiter: JobWaiter
    package var accounts: AccountService
    package var throttle: LoginThrottle
    /// `LOGIN_WEBHOOK_URL` is set: sign-ins and sign-outs enqueue a `login-webhook` job.
    package var loginWebhookConfigured: Bool
    /// `STRIPE_WEBHOOK_SECRET`: the signing secret of provider webhooks.
    package var stripeWebhookSecret: String?
    /// `OPS_USER` / `OPS_PASSWORD`: serve the operators' dashboard at `/ops/`; nil: `/ops/*` is 404.
    package var opsCredentials: OpsCredentials?
    /// `TRUSTED_PROXIES`: whose forwarded client address the per-address limits count.
    package var trustedProxies = TrustedProxies()
    /// `SMTP_URL`, `MAGIC_LINK_URL`, …: magic-link sign-in; nil: `auth/magic-link/request` is not configured.
    package var magicLink: MagicLinkSettings?
    /// `APPSTORE_*`: how App Store payloads are verified and mapped; nil: the App Store routes are not configured.
    package var appStore: AppStoreSettings?
    /// How long `analyze` and `chat` wait for their job before answering 202 (`SYNC_WAIT_SECONDS`, default 8).
    package var syncWait: Duration = .seconds(8)
    /// How often an idle event stream (`jobs/{id}/events`) sends a comment, so proxies keep it open
    /// (`EVENT_STREAM_HEARTBEAT_SECONDS`, default 15).
    package var eventHeartbeat: Duration = .seconds(15)
    /// The longest one event stream lasts before it ends and the client reconnects with `Last-Event-ID`
    /// (`EVENT_STREAM_MAX_SECONDS`, default 600): connections are rebalanced, and a forgotten client is dropped.
    package var eventStreamMaxDuration: Duration = .seconds(600)
    /// A connection that sends no complete request part (headers, a body chunk) for this long is closed
    /// (`HTTP_IDLE_TIMEOUT_SECONDS`, default 30): idle keep-alives, bodies that never finish, and headers sent a byte
    /// at a time (a part counts only once it is whole). A request being answered (a long-poll) is never cut.
    package var idleTimeout: Duration = .seconds(30)
    /// The zone of scan-reset midnights (`SCAN_RESET_TIMEZONE`, default UTC), as the scheduler uses.
    package var scanResetTimeZone: TimeZone = .gmt
    /// How long photos are kept (`PHOTO_RETENTION_DAYS`, default 30): bounds how long the app may cache a meal image.
    package var photoRetention: Duration = .seconds(30 * 86_400)
    package var logger: Logger

    package init(
        database: PostgresClient, redis: RedisClient, queue: JobQueue, accounts: AccountService, throttle: LoginThrottle,
        loginWebhookConfigured: Bool, logger: Logger
    ) {
        self.database = database
        self.reads = ReadRouting(primary: database)
        self.redis = redis
        self.queue = queue
        self.waiter = JobWaiter(queue: queue, sessions: accounts.sessions, logger: logger)
        // Revocations reach the other API processes' caches through the waiter's subscription.
        let channel = JobWaiter.sessionChannel(prefix: queue.options.prefix)
        accounts.sessions.setPublisher { [redis] message in
            do {
                _ = try await redis.send(["SPUBLISH", channel, message])
            } catch {
                logger.warning(
                    "could not publish a sign-in revocation; other processes drop it within the session cache's TTL",
                    metadata: ["error": "\(error)"])
            }
        }
        self.accounts = accounts
        self.throttle = throttle
        self.loginWebhookConfigured = loginWebhookConfigured
        self.logger = logger
    }

    /// Sends the read-only queries of the API to `replicas` when they have the reader's writes (`DATABASE_READ_URL`);
    /// run ``ReadReplicaHealthService`` beside the application.
    package mutating func useReadReplicas(_ replicas: PostgresReadReplicas) {
        reads = ReadRouting(replicas: replicas, redis: redis, prefix: queue.options.prefix, logger: logger)
    }
}

/// The CarbScan mobile API (`/api/mobile/v1`, seed 001) on Hummingbird 2.
package enum APIServer {
    /// The router with every route, and the list of (method, path) it serves.
    package static func router(_ dependencies: APIDependencies, telemetry: Telemetry? = nil) throws -> (
        router: Router<APIContext>, routes: [(method: String, path: String)]
    ) {
        let router = Router(context: APIContext.self)
        if TraceSwitch.isOn {
            // Outermost: the server span covers the whole request (continuing the client's `traceparent`) and sees
            // the status the error envelope answered. A query's secrets, should a client send any, stay out of it.
            let secrets: Set<Substring> = ["token", "code", "access_token", "refresh_token", "key"]
            router.add(middleware: ServerSpanMiddleware(redactedQueryParameters: secrets, proxies: dependencies.trustedProxies))
        }
        if let telemetry {
            // Outermost, so it sees the status the error envelope answered; /metrics is outside /api/mobile/v1.
            router.add(middleware: APIMetricsMiddleware(telemetry: telemetry))
            MetricsServer.addRoute(to: router, telemetry: telemetry)
        }
        let errors = ErrorEnvelopeMiddleware<APIContext>()
        router.add(middleware: errors)
        // Without `TRUSTED_PROXIES` the peer is the client (`APIContext.remoteIP`), and no request pays for the layer.
        if !dependencies.trustedProxies.blocks.isEmpty {
            router.add(middleware: ClientAddressMiddleware(proxies: dependencies.trustedProxies))
        }
        let reads = dependencies.reads
        if reads.replicas != nil { dependencies.waiter.markOwners(through: reads) }
        let api = RouteTable(router: router, reads: reads)
        let authenticator = Authenticator(accounts: dependencies.accounts)
        let database = dependencies.database
        let recorder = LoginRecorder(
            database: database, queue: dependencies.queue, webhookConfigured: dependencies.loginWebhookConfigured,
            logger: dependencies.logger)
        HealthRoutes(database: database, redis: dependencies.redis, queue: dependencies.queue, openAPIDocument: try openAPIDocument())
            .register(on: api)
        AuthRoutes(accounts: dependencies.accounts, authenticator: authenticator, throttle: dependencies.throttle, recorder: recorder)
            .register(on: api)
        MagicLinkRoutes(accounts: dependencies.accounts, queue: dependencies.queue, recorder: recorder, settings: dependencies.magicLink)
            .register(on: api)
        UserRoutes(accounts: dependencies.accounts, authenticator: authenticator).register(on: api)
        let idempotency = IdempotentRequests(database: database)
        MealsRoutes(
            database: database, reads: reads, authenticator: authenticator, idempotency: idempotency,
            photoRetention: dependencies.photoRetention
        )
        .register(on: api)
        InsightsRoutes(reads: reads, authenticator: authenticator).register(on: api)
        SubscriptionRoutes(reads: reads, authenticator: authenticator).register(on: api)
        let results = ResultSettings(
            syncWait: dependencies.syncWait, scanResetTimeZone: dependencies.scanResetTimeZone, eventHeartbeat: dependencies.eventHeartbeat,
            eventStreamMaxDuration: dependencies.eventStreamMaxDuration)
        ChatRoutes(
            database: database, reads: reads, queue: dependencies.queue, waiter: dependencies.waiter, authenticator: authenticator,
            settings: results,
            idempotency: idempotency
        )
        .register(on: api)
        AnalyzeRoutes(
            database: database, queue: dependencies.queue, waiter: dependencies.waiter, authenticator: authenticator, settings: results,
            idempotency: idempotency
        )
        .register(on: api)
        JobRoutes(
            database: database, queue: dependencies.queue, waiter: dependencies.waiter, authenticator: authenticator, settings: results
        )
        .register(on: api)
        LoginRoutes(queue: dependencies.queue, authenticator: authenticator, webhookConfigured: dependencies.loginWebhookConfigured)
            .register(on: api)
        DeviceRoutes(
            database: database, queue: dependencies.queue, waiter: dependencies.waiter, authenticator: authenticator,
            idempotency: idempotency
        )
        .register(on: api)
        BillingRoutes(
            database: database, queue: dependencies.queue, waiter: dependencies.waiter, authenticator: authenticator,
            webhookSecret: dependencies.stripeWebhookSecret, settings: results
        ).register(on: api)
        AppStoreRoutes(
            database: database, queue: dependencies.queue, authenticator: authenticator, settings: dependencies.appStore,
            scanResetTimeZone: dependencies.scanResetTimeZone
        ).register(on: api)
        errors.allowed.set(api.routes)
        if let credentials = dependencies.opsCredentials {
            OpsRoutes(queue: dependencies.queue, credentials: credentials, throttle: dependencies.throttle).register(on: router)
        }
        return (router, api.routes)
    }

    package static func application(
        _ dependencies: APIDependencies, host: String, port: Int, telemetry: Telemetry? = nil,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        Application(
            router: try router(dependencies, telemetry: telemetry).router,
            server: .http1(configuration: .init(idleTimeout: .nanoseconds(Int64(dependencies.idleTimeout.milliseconds) * 1_000_000))),
            configuration: .init(address: .hostname(host, port: port), serverName: "carbscan"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
            logger: dependencies.logger)
    }

    /// The OpenAPI 3 document of the whole API, shipped as a resource and served at `openapi.json`.
    package static func openAPIDocument() throws -> Data {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json") else {
            throw StoreResourceError("openapi.json is missing from the API bundle")
        }
        return try Data(contentsOf: url)
    }
}

struct StoreResourceError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
