import API
import Accounts
import AppStore
import Postgres
import Settings

extension ServeSettings {
    /// Everything `carbscan serve` reads. A value that is set but wrong throws, naming its variable (the command exits
    /// 78); `carbscan config check` reads the same parts one by one to list every such value at once.
    package init(environment: EnvironmentReader) throws(SettingError) {
        self.init(
            auth: try AuthSettings(environment: environment), api: try APISettings(environment: environment),
            appStore: try AppStoreSettings(environment: environment), magicLink: try MagicLinkSettings(environment: environment),
            readReplicas: try ReadReplicaSettings(environment: environment))
    }
}

extension ReadReplicaSettings {
    /// Nil when `DATABASE_READ_URL` is unset or blank. A URL that does not parse (named by its place in the list, its
    /// password never shown), a lag bound outside 0.1–3600 s or a pool size outside 1–100 is refused.
    package init?(environment: EnvironmentReader) throws(SettingError) {
        let urls = environment.list("DATABASE_READ_URL")
        guard !urls.isEmpty else { return nil }
        var replicas: [PostgresConfiguration] = []
        for (index, url) in urls.enumerated() {
            do {
                var replica = try PostgresConfiguration(url: url)
                replica.genericPlans = true  // the API's reads, as on the primary
                replicas.append(replica)
            } catch {
                throw SettingError("DATABASE_READ_URL", "replica \(index + 1) of \(urls.count): \(error.message)")
            }
        }
        var options = PostgresReadReplicas.Options()
        options.maxLag = try environment.seconds("DATABASE_READ_MAX_LAG_SECONDS", default: options.maxLag, in: 0.1...3600)
        options.poolSize = try environment.integer("DATABASE_READ_POOL_SIZE", default: options.poolSize, in: 1...100)
        self.init(replicas: replicas, options: options)
    }
}

extension APISettings {
    /// `LOGIN_MAX_FAILURES`, `LOGIN_MAX_ATTEMPTS_PER_IP`, `SYNC_WAIT_SECONDS`, `HTTP_IDLE_TIMEOUT_SECONDS`,
    /// `SCAN_RESET_TIMEZONE`, `LOGIN_WEBHOOK_URL`, `STRIPE_WEBHOOK_SECRET`, `PHOTO_RETENTION_DAYS`, `OPS_USER`,
    /// `OPS_PASSWORD`, `TRUSTED_PROXIES`.
    package init(environment: EnvironmentReader) throws(SettingError) {
        self.init()
        maxLoginFailures = try environment.integer("LOGIN_MAX_FAILURES", default: maxLoginFailures, in: 1...1_000_000_000)
        maxLoginAttemptsPerIP = try environment.integer("LOGIN_MAX_ATTEMPTS_PER_IP", default: maxLoginAttemptsPerIP, in: 1...1_000_000_000)
        syncWait = try environment.seconds("SYNC_WAIT_SECONDS", default: syncWait, in: 0...30)
        eventHeartbeat = try environment.seconds("EVENT_STREAM_HEARTBEAT_SECONDS", default: eventHeartbeat, in: 0.01...300)
        eventStreamMaxDuration = try environment.seconds("EVENT_STREAM_MAX_SECONDS", default: eventStreamMaxDuration, in: 1...86_400)
        idleTimeout = try environment.seconds("HTTP_IDLE_TIMEOUT_SECONDS", default: idleTimeout, in: 0.001...3600)
        scanResetTimeZone = try environment.timeZone("SCAN_RESET_TIMEZONE", default: scanResetTimeZone)
        loginWebhookConfigured = environment.text("LOGIN_WEBHOOK_URL") != nil
        stripeWebhookSecret = environment.text("STRIPE_WEBHOOK_SECRET")
        photoRetention = .seconds(try environment.integer("PHOTO_RETENTION_DAYS", default: 30, in: 1...36_500) * 86_400)
        opsCredentials = try OpsCredentials(environment: environment)
        if let text = environment.text("TRUSTED_PROXIES") {
            guard let proxies = TrustedProxies(parsing: text) else {
                throw SettingError(
                    "TRUSTED_PROXIES", "must be comma-separated addresses or CIDR blocks (10.0.0.0/8, fd00::/8), not '\(text)'")
            }
            trustedProxies = proxies
        }
    }
}

extension OpsCredentials {
    /// `OPS_USER` and `OPS_PASSWORD` both set: the dashboard is on; both unset: off (nil). One without the other, or a
    /// short password, is refused. The password is taken exactly as set, spaces included.
    init?(environment: EnvironmentReader) throws(SettingError) {
        switch (environment.text("OPS_USER"), environment.secret("OPS_PASSWORD")) {
        case (nil, nil): return nil
        case (nil, _): throw SettingError("OPS_USER", "must be set when OPS_PASSWORD is (the dashboard needs both)")
        case (_, nil): throw SettingError("OPS_PASSWORD", "must be set when OPS_USER is (the dashboard needs both)")
        case (let user?, let password?):
            guard password.count >= Self.minimumPasswordLength else {
                throw SettingError("OPS_PASSWORD", "must be at least \(Self.minimumPasswordLength) characters")
            }
            guard !user.contains(":") else { throw SettingError("OPS_USER", "must not contain ':' (HTTP Basic splits on it)") }
            self.init(user: user, password: password)
        }
    }
}

extension MagicLinkSettings {
    /// Nil when `SMTP_URL` is unset. `MAGIC_LINK_URL` without `{token}`, or a limit (`MAGIC_LINK_MAX_PER_EMAIL`,
    /// `MAGIC_LINK_MAX_PER_IP`) that is not a positive number, is refused.
    package init?(environment: EnvironmentReader) throws(SettingError) {
        guard environment.text("SMTP_URL") != nil else { return nil }
        self.init()
        if let template = environment.text("MAGIC_LINK_URL") {
            guard template.contains("{token}") else { throw SettingError("MAGIC_LINK_URL", "must contain {token}, not '\(template)'") }
            linkTemplate = template
        }
        maxPerEmail = try environment.integer("MAGIC_LINK_MAX_PER_EMAIL", default: maxPerEmail, in: 1...1_000_000_000)
        maxPerIP = try environment.integer("MAGIC_LINK_MAX_PER_IP", default: maxPerIP, in: 1...1_000_000_000)
    }
}
