import Foundation
import Queue

/// The API's own settings, read from the environment once (provider settings have their readers:
/// `AuthConfiguration`, `AppStoreConfiguration`, `MagicLinkSettings`). A value that is set but wrong throws
/// ``SettingError`` naming it.
package struct APISettings: Sendable {
    /// `LOGIN_MAX_FAILURES`: failed logins per account per 15 minutes.
    package var maxLoginFailures = 10
    /// `LOGIN_MAX_ATTEMPTS_PER_IP`: login attempts per client address per minute.
    package var maxLoginAttemptsPerIP = 60
    /// `SYNC_WAIT_SECONDS` (0–30).
    package var syncWait: Duration = .seconds(8)
    /// `HTTP_IDLE_TIMEOUT_SECONDS` (over 0, at most 3600).
    package var idleTimeout: Duration = .seconds(30)
    /// `SCAN_RESET_TIMEZONE`.
    package var scanResetTimeZone: TimeZone = .gmt
    /// `LOGIN_WEBHOOK_URL` is set.
    package var loginWebhookConfigured = false
    /// `STRIPE_WEBHOOK_SECRET`.
    package var stripeWebhookSecret: String?
    /// `PHOTO_RETENTION_DAYS` (as the workers read it): a meal image is cached no longer than its photo is kept.
    package var photoRetention: Duration = .seconds(30 * 86_400)
    /// `OPS_USER` and `OPS_PASSWORD`: the operators' dashboard at `/ops/`; nil (both unset): no dashboard (404).
    package var opsCredentials: OpsCredentials?
    /// `TRUSTED_PROXIES`: comma-separated CIDR blocks of the reverse proxies whose forwarded client address counts.
    package var trustedProxies = TrustedProxies()

    package init() {}

    package static func fromEnvironment(_ environment: [String: String]) throws(SettingError) -> APISettings {
        let settings = EnvironmentSettings(environment)
        var api = APISettings()
        api.maxLoginFailures = try settings.integer("LOGIN_MAX_FAILURES", default: api.maxLoginFailures, in: 1...1_000_000_000)
        api.maxLoginAttemptsPerIP = try settings.integer(
            "LOGIN_MAX_ATTEMPTS_PER_IP", default: api.maxLoginAttemptsPerIP, in: 1...1_000_000_000)
        api.syncWait = try settings.seconds("SYNC_WAIT_SECONDS", default: api.syncWait, in: 0...30)
        api.idleTimeout = try settings.seconds("HTTP_IDLE_TIMEOUT_SECONDS", default: api.idleTimeout, in: 0.001...3600)
        api.scanResetTimeZone = try settings.timeZone("SCAN_RESET_TIMEZONE", default: api.scanResetTimeZone)
        api.loginWebhookConfigured = settings.text("LOGIN_WEBHOOK_URL") != nil
        api.stripeWebhookSecret = settings.text("STRIPE_WEBHOOK_SECRET")
        api.photoRetention = .seconds(try settings.integer("PHOTO_RETENTION_DAYS", default: 30, in: 1...36_500) * 86_400)
        api.opsCredentials = try OpsCredentials.fromEnvironment(settings)
        if let text = settings.text("TRUSTED_PROXIES") {
            guard let proxies = TrustedProxies(parsing: text) else {
                throw SettingError(
                    "TRUSTED_PROXIES", "must be comma-separated addresses or CIDR blocks (10.0.0.0/8, fd00::/8), not '\(text)'")
            }
            api.trustedProxies = proxies
        }
        return api
    }
}
