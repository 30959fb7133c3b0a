import Accounts
import AppStore
import Foundation
import Logging
import OutboundHTTP
import Postgres
import Queue

extension APIDependencies {
    /// The production wiring from a database, a queue and the process's settings.
    package static func live(
        database: PostgresClient, queue: JobQueue, settings serve: ServeSettings, logger: Logger, http: HTTPClient = HTTPClient()
    ) async -> APIDependencies {
        let auth = serve.auth
        let refetch = auth.jwksMinimumRefetchInterval
        let apple = auth.apple.map { IdentityVerifier(provider: $0, http: http, logger: logger, minimumRefetchInterval: refetch) }
        let extra = auth.extraIssuers.map { IdentityVerifier(provider: $0, http: http, logger: logger, minimumRefetchInterval: refetch) }
        let accounts = AccountService(
            database: database, settings: auth,
            accessTokens: await AccessTokens(secret: auth.jwtSecret, lifetime: auth.accessTokenLifetime), apple: apple,
            extraIssuers: extra, logger: logger)
        let settings = serve.api
        var throttle = LoginThrottle(redis: queue.redis, prefix: queue.options.prefix)
        throttle.maxFailures = settings.maxLoginFailures
        throttle.maxAttemptsPerIP = settings.maxLoginAttemptsPerIP
        var dependencies = APIDependencies(
            database: database, redis: queue.redis, queue: queue, accounts: accounts, throttle: throttle,
            loginWebhookConfigured: settings.loginWebhookConfigured, logger: logger)
        dependencies.stripeWebhookSecret = settings.stripeWebhookSecret
        dependencies.opsCredentials = settings.opsCredentials
        dependencies.trustedProxies = settings.trustedProxies
        dependencies.syncWait = settings.syncWait
        dependencies.eventHeartbeat = settings.eventHeartbeat
        dependencies.eventStreamMaxDuration = settings.eventStreamMaxDuration
        dependencies.idleTimeout = settings.idleTimeout
        dependencies.scanResetTimeZone = settings.scanResetTimeZone
        dependencies.photoRetention = settings.photoRetention
        dependencies.appStore = serve.appStore
        dependencies.magicLink = serve.magicLink
        if let read = serve.readReplicas {
            dependencies.useReadReplicas(
                PostgresReadReplicas(primary: database, replicas: read.replicas, options: read.options, logger: logger))
        }
        return dependencies
    }
}
