import Logging
import Mail
import OutboundHTTP
import Postgres
import Queue
import Redis

/// Every handler this build knows.
package enum Handlers {
    /// The diagnostics kind only (engine tests, chaos runs, benchmarks).
    package static func registry(redis: RedisClient) -> JobRegistry {
        var registry = JobRegistry()
        registry.register(NoopJob(redis: redis))
        return registry
    }

    /// Every kind: noop, the six CarbScan kinds and photo retention, on the process's shared clients.
    package static func registry(services: WorkerServices) -> JobRegistry {
        var registry = registry(redis: services.redis)
        registry.register(AnalysisJob(services: services))
        registry.register(ChatJob(services: services))
        registry.register(ScanResetJob(services: services))
        registry.register(SubscriptionSyncJob(services: services))
        registry.register(PushRegistrationJob(services: services))
        registry.register(LoginWebhookJob(services: services))
        registry.register(PhotoRetentionJob(services: services))
        registry.register(EmailJob(services: services))
        return registry
    }
}

/// What handlers work with: the process's Redis, Postgres and outbound HTTP clients and its settings.
package struct WorkerServices: Sendable {
    package var redis: RedisClient
    /// The Redis key prefix of the queue (shared rate limits live under it).
    package var prefix: String
    /// The job kinds' settings (`jobs/*.yml`), e.g. a kind's provider rate limit.
    package var catalog: JobCatalog
    package var database: PostgresClient
    package var http: HTTPClient
    package var settings: WorkerSettings
    package var logger: Logger
    /// Sends the `email` kind's mail (`SMTP_URL`); nil: those jobs die with a configuration error.
    package var mailer: SMTPMailer?

    package init(
        redis: RedisClient, prefix: String, catalog: JobCatalog, database: PostgresClient, http: HTTPClient, settings: WorkerSettings,
        logger: Logger, mailer: SMTPMailer? = nil
    ) {
        self.redis = redis
        self.prefix = prefix
        self.catalog = catalog
        self.database = database
        self.http = http
        self.settings = settings
        self.logger = logger
        self.mailer = mailer
    }
}
