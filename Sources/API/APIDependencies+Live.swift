import Accounts
import AppStore
import Foundation
import Logging
import OutboundHTTP
import Postgres
import Queue

extension APIDependencies {
    /// The production wiring from a database, a queue and the environment (`LOGIN_WEBHOOK_URL`,
    /// `LOGIN_MAX_FAILURES`, `LOGIN_MAX_ATTEMPTS_PER_IP`, `STRIPE_WEBHOOK_SECRET`, `SYNC_WAIT_SECONDS`,
    /// `HTTP_IDLE_TIMEOUT_SECONDS`, `SCAN_RESET_TIMEZONE`, `APPSTORE_*`, `SMTP_URL`, `MAGIC_LINK_*`). A value that is set
    /// but wrong throws ``SettingError`` (or ``AppStoreError``) naming it.
    package static func live(
        database: PostgresClient, queue: JobQueue, auth: AuthConfiguration, environment: [String: String], logger: Logger,
        http: HTTPClient = HTTPClient()
    ) async throws -> APIDependencies {
        let refetch = auth.jwksMinimumRefetchInterval
        let apple = auth.apple.map { IdentityVerifier(provider: $0, http: http, logger: logger, minimumRefetchInterval: refetch) }
        let extra = auth.extraIssuers.map { IdentityVerifier(provider: $0, http: http, logger: logger, minimumRefetchInterval: refetch) }
        let accounts = AccountService(
            database: database, configuration: auth,
            accessTokens: await AccessTokens(secret: auth.jwtSecret, lifetime: auth.accessTokenLifetime), apple: apple,
            extraIssuers: extra, logger: logger)
        let settings = try APISettings.fromEnvironment(environment)
        var throttle = LoginThrottle(redis: queue.redis, prefix: queue.options.prefix)
        throttle.maxFailures = settings.maxLoginFailures
        throttle.maxAttemptsPerIP = settings.maxLoginAttemptsPerIP
        var dependencies = APIDependencies(
            database: database, redis: queue.redis, queue: queue, accounts: accounts, throttle: throttle,
            loginWebhookConfigured: settings.loginWebhookConfigured, logger: logger)
        dependencies.stripeWebhookSecret = settings.stripeWebhookSecret
        dependencies.syncWait = settings.syncWait
        dependencies.idleTimeout = settings.idleTimeout
        dependencies.scanResetTimeZone = settings.scanResetTimeZone
        dependencies.appStore = try AppStoreConfiguration.fromEnvironment(environment)
        dependencies.magicLink = try MagicLinkSettings.fromEnvironment(environment)
        return dependencies
    }
}
