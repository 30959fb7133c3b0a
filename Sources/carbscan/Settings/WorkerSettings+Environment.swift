import AppStore
import Push
import Settings
import Workers

extension WorkerSettings {
    /// `AI_BASE_URL`, `AI_API_KEY`, `AI_MODEL`, `AI_MAX_TOKENS_ANALYSIS`, `AI_MAX_TOKENS_CHAT`, `LOGIN_WEBHOOK_URL`,
    /// `LOGIN_WEBHOOK_API_KEY`, `LOGIN_WEBHOOK_ID_FIELD` (`none`: no id member), `STRIPE_API_BASE`, `STRIPE_SECRET_KEY`,
    /// `STRIPE_PRICE_TIERS`, `SCAN_RESET_TIMEZONE`, `PHOTO_RETENTION_DAYS`, `MAIL_FROM`, `SMTP_URL`, `APPSTORE_*`, `APNS_*`, `FCM_*`,
    /// `DATABASE_READ_URL` and `DATABASE_READ_MAX_LAG_SECONDS` (the write marks' lifetime):
    /// everything a worker process takes from its environment, read once at start-up.
    package init(environment: EnvironmentReader) throws(SettingError) {
        self.init()
        aiBaseURL = environment.baseURL("AI_BASE_URL")
        aiAPIKey = environment.text("AI_API_KEY")
        aiModel = environment.text("AI_MODEL") ?? aiModel
        for (kind, fallback) in Self.defaultMaxTokens {
            aiMaxTokens[kind] = try environment.integer("AI_MAX_TOKENS_\(kind.uppercased())", default: fallback, in: 1...1_000_000)
        }
        loginWebhookURL = environment.baseURL("LOGIN_WEBHOOK_URL")
        loginWebhookAPIKey = environment.text("LOGIN_WEBHOOK_API_KEY")
        if let field = environment.text("LOGIN_WEBHOOK_ID_FIELD") { loginWebhookIDField = field == "none" ? nil : field }
        stripeAPIBase = environment.text("STRIPE_API_BASE") ?? stripeAPIBase
        stripeSecretKey = environment.text("STRIPE_SECRET_KEY")
        stripePriceTiers = try environment.pairs("STRIPE_PRICE_TIERS")
        scanResetTimeZone = try environment.timeZone("SCAN_RESET_TIMEZONE", default: scanResetTimeZone)
        photoRetention = .seconds(try environment.integer("PHOTO_RETENTION_DAYS", default: 30, in: 1...36_500) * 86_400)
        mailFrom = environment.text("MAIL_FROM") ?? mailFrom
        smtpURL = environment.text("SMTP_URL")
        appStore = try AppStoreSettings(environment: environment)
        push = try PushSettings(environment: environment)
        fcm = try FCMSettings(environment: environment)
        if !environment.list("DATABASE_READ_URL").isEmpty {
            writeMarkLifetime = try environment.seconds("DATABASE_READ_MAX_LAG_SECONDS", default: .seconds(10), in: 0.1...3600) * 3
        }
    }
}
