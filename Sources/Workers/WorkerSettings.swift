import AppStore
import Foundation
import JobContracts
import Queue

/// Handlers' settings, from the environment. Missing provider settings are not start-up errors: the kinds that
/// need them fail their jobs with a clear configuration error (dead at once), never a fabricated result.
package struct WorkerSettings: Sendable {
    /// OpenAI-compatible API: `{aiBaseURL}/v1/chat/completions`.
    package var aiBaseURL: String?
    package var aiAPIKey: String?
    package var aiModel: String
    /// The most tokens a model may generate per answer, by kind (`AI_MAX_TOKENS_ANALYSIS`, `AI_MAX_TOKENS_CHAT`):
    /// without a bound llama.cpp, Ollama and vLLM generate until the context is full.
    package var aiMaxTokens: [String: Int]
    /// Supabase/PostgREST-style login endpoint: `{loginWebhookURL}/logins`.
    package var loginWebhookURL: String?
    package var loginWebhookAPIKey: String?
    /// The member that carries a sign-in's event id: the table's own primary key (seed 002's `id`, a UUID), so a
    /// re-delivery is a 409, not a second row. Nil (`LOGIN_WEBHOOK_ID_FIELD=none`) for an API that refuses unknown
    /// members: then a re-delivery may insert twice.
    package var loginWebhookIDField: String?
    /// Stripe-style subscription API: `{stripeAPIBase}/v1/subscriptions/{id}`.
    package var stripeAPIBase: String
    package var stripeSecretKey: String?
    /// Price id → tier, e.g. `price_ess=essentials,price_pro=pro`.
    package var stripePriceTiers: [String: String]
    /// App Store verification and products (`APPSTORE_*`, read by `AppStoreConfiguration.fromEnvironment`, which
    /// refuses a bad value); nil: App Store jobs die with a configuration error.
    package var appStore: AppStoreConfiguration?
    /// The zone of the scan-reset schedule's midnights (jobs/scan-reset.yml uses the same).
    package var scanResetTimeZone: TimeZone
    /// Stored photos are deleted after this.
    package var photoRetention: Duration
    /// The sender of the `email` kind's mail (`MAIL_FROM`).
    package var mailFrom: String = "CarbScan <noreply@localhost>"
    /// The mail server of the `email` kind (`SMTP_URL`); nil: email jobs die with a configuration error.
    package var smtpURL: String?

    package init(
        aiBaseURL: String? = nil, aiAPIKey: String? = nil, aiModel: String = "gpt-4o-mini",
        aiMaxTokens: [String: Int] = WorkerSettings.defaultMaxTokens, loginWebhookURL: String? = nil,
        loginWebhookAPIKey: String? = nil, loginWebhookIDField: String? = "id", stripeAPIBase: String = "https://api.stripe.com",
        stripeSecretKey: String? = nil,
        stripePriceTiers: [String: String] = [:], scanResetTimeZone: TimeZone = .gmt, photoRetention: Duration = .seconds(30 * 86_400),
        mailFrom: String? = nil
    ) {
        self.aiBaseURL = aiBaseURL
        self.aiAPIKey = aiAPIKey
        self.aiModel = aiModel
        self.aiMaxTokens = aiMaxTokens
        self.loginWebhookURL = loginWebhookURL
        self.loginWebhookAPIKey = loginWebhookAPIKey
        self.loginWebhookIDField = loginWebhookIDField
        self.stripeAPIBase = stripeAPIBase
        self.stripeSecretKey = stripeSecretKey
        self.stripePriceTiers = stripePriceTiers
        self.scanResetTimeZone = scanResetTimeZone
        self.photoRetention = photoRetention
        if let mailFrom { self.mailFrom = mailFrom }
    }

    /// An analysis answer is a short JSON object (about 200 tokens); a chat answer at most 8,000 characters is kept.
    package static let defaultMaxTokens = [AnalysisContract.name: 700, ChatContract.name: 1200]

    /// The bound for `kind`'s answers (1,000 for a kind without its own).
    package func aiMaxTokens(forKind kind: String) -> Int { aiMaxTokens[kind] ?? 1000 }

    /// `AI_BASE_URL`, `AI_API_KEY`, `AI_MODEL`, `AI_MAX_TOKENS_ANALYSIS`, `AI_MAX_TOKENS_CHAT`, `LOGIN_WEBHOOK_URL`,
    /// `LOGIN_WEBHOOK_API_KEY`, `LOGIN_WEBHOOK_ID_FIELD`, `STRIPE_API_BASE`, `STRIPE_SECRET_KEY`, `STRIPE_PRICE_TIERS`,
    /// `SCAN_RESET_TIMEZONE`, `PHOTO_RETENTION_DAYS`, `MAIL_FROM`, `SMTP_URL`, `APPSTORE_*`: everything a worker process
    /// takes from its environment, read once at start-up. A value that is set but wrong throws ``SettingError`` (or
    /// ``AppStoreError``) naming it.
    package static func fromEnvironment(_ environment: [String: String]) throws -> WorkerSettings {
        let settings = EnvironmentSettings(environment)
        func url(_ name: String) -> String? { settings.text(name).map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } }
        var maxTokens = defaultMaxTokens
        for (kind, fallback) in defaultMaxTokens {
            maxTokens[kind] = try settings.integer("AI_MAX_TOKENS_\(kind.uppercased())", default: fallback, in: 1...1_000_000)
        }
        let retentionDays = try settings.integer("PHOTO_RETENTION_DAYS", default: 30, in: 1...36_500)
        var read = WorkerSettings(
            aiBaseURL: url("AI_BASE_URL"), aiAPIKey: settings.text("AI_API_KEY"), aiModel: settings.text("AI_MODEL") ?? "gpt-4o-mini",
            aiMaxTokens: maxTokens, loginWebhookURL: url("LOGIN_WEBHOOK_URL"), loginWebhookAPIKey: settings.text("LOGIN_WEBHOOK_API_KEY"),
            loginWebhookIDField: settings.text("LOGIN_WEBHOOK_ID_FIELD").map { $0 == "none" ? nil : $0 } ?? "id",
            stripeAPIBase: settings.text("STRIPE_API_BASE") ?? "https://api.stripe.com",
            stripeSecretKey: settings.text("STRIPE_SECRET_KEY"), stripePriceTiers: try settings.pairs("STRIPE_PRICE_TIERS"),
            scanResetTimeZone: try settings.timeZone("SCAN_RESET_TIMEZONE", default: .gmt),
            photoRetention: .seconds(retentionDays * 86_400), mailFrom: settings.text("MAIL_FROM"))
        read.smtpURL = settings.text("SMTP_URL")
        read.appStore = try AppStoreConfiguration.fromEnvironment(environment)
        return read
    }
}
