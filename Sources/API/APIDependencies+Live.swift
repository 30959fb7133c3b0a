import Accounts
import AppStore
import Foundation
import Logging
import OutboundHTTP
import Postgres
import Queue

extension APIDependencies {
    /// The production wiring from a database, a queue and the environment (`LOGIN_WEBHOOK_URL`,
    /// `LOGIN_MAX_FAILURES`, `LOGIN_MAX_ATTEMPTS_PER_IP`, `STRIPE_WEBHOOK_SECRET`, `SYNC_WAIT_SECONDS`, `SCAN_RESET_TIMEZONE`, `APPSTORE_*`).
    public static func live(
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
        var throttle = LoginThrottle(redis: queue.redis, prefix: queue.options.prefix)
        if let value = environment["LOGIN_MAX_FAILURES"].flatMap(Int.init) { throttle.maxFailures = value }
        if let value = environment["LOGIN_MAX_ATTEMPTS_PER_IP"].flatMap(Int.init) { throttle.maxAttemptsPerIP = value }
        var dependencies = APIDependencies(
            database: database, redis: queue.redis, queue: queue, accounts: accounts, throttle: throttle,
            loginWebhookConfigured: !(environment["LOGIN_WEBHOOK_URL"] ?? "").isEmpty, logger: logger)
        dependencies.stripeWebhookSecret = environment["STRIPE_WEBHOOK_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        if let seconds = environment["SYNC_WAIT_SECONDS"].flatMap(Double.init), (0...30).contains(seconds) {
            dependencies.syncWait = .milliseconds(Int(seconds * 1000))
        }
        dependencies.appStore = try AppStoreConfiguration.fromEnvironment(environment)
        dependencies.magicLink = MagicLinkSettings.fromEnvironment(environment)
        if let seconds = environment["HTTP_IDLE_TIMEOUT_SECONDS"].flatMap(Double.init), seconds > 0, seconds <= 3600 {
            dependencies.idleTimeout = .milliseconds(Int(seconds * 1000))
        }
        if let zone = environment["SCAN_RESET_TIMEZONE"].flatMap(TimeZone.init(identifier:)) { dependencies.scanResetTimeZone = zone }
        return dependencies
    }
}
