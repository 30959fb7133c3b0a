import AppStore
import Foundation
import JobContracts
import Push

/// Handlers' settings: `AI_*`, `LOGIN_WEBHOOK_*`, `STRIPE_*`, `SCAN_RESET_TIMEZONE`, `PHOTO_RETENTION_DAYS`, `MAIL_FROM`,
/// `SMTP_URL`, `APPSTORE_*`, `APNS_*`, `FCM_*` (the executable reads them once at start-up). Missing provider settings are not start-up
/// errors: the kinds that need them fail their jobs with a clear configuration error (dead at once), never a
/// fabricated result.
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
    /// App Store verification and products (`APPSTORE_*`); nil: App Store jobs die with a configuration error.
    package var appStore: AppStoreSettings?
    /// The zone of the scan-reset schedule's midnights (jobs/scan-reset.yml uses the same).
    package var scanResetTimeZone: TimeZone
    /// Stored photos are deleted after this.
    package var photoRetention: Duration
    /// The sender of the `email` kind's mail (`MAIL_FROM`).
    package var mailFrom: String = "CarbScan <noreply@localhost>"
    /// The mail server of the `email` kind (`SMTP_URL`); nil: email jobs die with a configuration error.
    package var smtpURL: String?
    /// The APNs provider API (`APNS_*`); nil: pushes are off, and `push` jobs end sending nothing.
    package var push: PushSettings?
    /// FCM HTTP v1 (`FCM_*`); nil: Android devices get no pushes.
    package var fcm: FCMSettings?
    /// With read replicas (`DATABASE_READ_URL` set): how long a user's write mark lives, 3 × `DATABASE_READ_MAX_LAG_SECONDS`
    /// as the API keeps it. A push marks its owner's write (the app, told the job ended, reads what the job wrote next).
    /// Nil: no replicas, no marks.
    package var writeMarkLifetime: Duration?

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
}
