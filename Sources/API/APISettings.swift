import Foundation

/// The API's own settings (provider settings are apart: `AuthSettings`, `AppStoreSettings`, `MagicLinkSettings`); the
/// executable reads them from the environment once.
package struct APISettings: Sendable {
    /// `LOGIN_MAX_FAILURES`: failed logins per account per 15 minutes.
    package var maxLoginFailures = 10
    /// `LOGIN_MAX_ATTEMPTS_PER_IP`: login attempts per client address per minute.
    package var maxLoginAttemptsPerIP = 60
    /// `SYNC_WAIT_SECONDS` (0–30).
    package var syncWait: Duration = .seconds(8)
    /// `EVENT_STREAM_HEARTBEAT_SECONDS` (over 0, at most 300).
    package var eventHeartbeat: Duration = .seconds(15)
    /// `EVENT_STREAM_MAX_SECONDS` (at least 1, at most 86400).
    package var eventStreamMaxDuration: Duration = .seconds(600)
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
}
