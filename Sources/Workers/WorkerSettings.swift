import AppStore
import Foundation

/// Handlers' settings, from the environment. Missing provider settings are not start-up errors: the kinds that
/// need them fail their jobs with a clear configuration error (dead at once), never a fabricated result.
public struct WorkerSettings: Sendable {
    /// OpenAI-compatible API: `{aiBaseURL}/v1/chat/completions`.
    public var aiBaseURL: String?
    public var aiAPIKey: String?
    public var aiModel: String
    /// The most tokens a model may generate per answer, by kind (`AI_MAX_TOKENS_ANALYSIS`, `AI_MAX_TOKENS_CHAT`):
    /// without a bound llama.cpp, Ollama and vLLM generate until the context is full.
    public var aiMaxTokens: [String: Int]
    /// Supabase/PostgREST-style login endpoint: `{loginWebhookURL}/logins`.
    public var loginWebhookURL: String?
    public var loginWebhookAPIKey: String?
    /// The member that carries a sign-in's event id: the table's own primary key (seed 002's `id`, a UUID), so a
    /// re-delivery is a 409, not a second row. Nil (`LOGIN_WEBHOOK_ID_FIELD=none`) for an API that refuses unknown
    /// members: then a re-delivery may insert twice.
    public var loginWebhookIDField: String?
    /// Stripe-style subscription API: `{stripeAPIBase}/v1/subscriptions/{id}`.
    public var stripeAPIBase: String
    public var stripeSecretKey: String?
    /// Price id → tier, e.g. `price_ess=essentials,price_pro=pro`.
    public var stripePriceTiers: [String: String]
    /// App Store verification and products (`APPSTORE_*`, read by `AppStoreConfiguration.fromEnvironment`, which
    /// refuses a bad value); nil: App Store jobs die with a configuration error.
    public var appStore: AppStoreConfiguration?
    /// The zone of the scan-reset schedule's midnights (jobs/scan-reset.yml uses the same).
    public var scanResetTimeZone: TimeZone
    /// Stored photos are deleted after this.
    public var photoRetention: Duration
    /// The sender of the `email` kind's mail (`MAIL_FROM`).
    public var mailFrom: String = "CarbScan <noreply@localhost>"

    public init(
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
    public static let defaultMaxTokens = ["analysis": 700, "chat": 1200]

    /// The bound for `kind`'s answers (1,000 for a kind without its own).
    public func aiMaxTokens(forKind kind: String) -> Int { aiMaxTokens[kind] ?? 1000 }

    /// `AI_BASE_URL`, `AI_API_KEY`, `AI_MODEL`, `AI_MAX_TOKENS_ANALYSIS`, `AI_MAX_TOKENS_CHAT`, `LOGIN_WEBHOOK_URL`, `LOGIN_WEBHOOK_API_KEY`, `LOGIN_WEBHOOK_ID_FIELD`, `STRIPE_API_BASE`,
    /// `STRIPE_SECRET_KEY`, `STRIPE_PRICE_TIERS`, `SCAN_RESET_TIMEZONE`, `PHOTO_RETENTION_DAYS`.
    public static func fromEnvironment(_ environment: [String: String]) -> WorkerSettings {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        var tiers: [String: String] = [:]
        for pair in (value("STRIPE_PRICE_TIERS") ?? "").split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { tiers[parts[0]] = parts[1] }
        }
        var maxTokens = defaultMaxTokens
        for kind in maxTokens.keys {
            if let text = value("AI_MAX_TOKENS_\(kind.uppercased())"), let bound = Int(text), bound > 0 { maxTokens[kind] = bound }
        }
        return WorkerSettings(
            aiBaseURL: value("AI_BASE_URL").map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }, aiAPIKey: value("AI_API_KEY"),
            aiModel: value("AI_MODEL") ?? "gpt-4o-mini", aiMaxTokens: maxTokens,
            loginWebhookURL: value("LOGIN_WEBHOOK_URL").map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 },
            loginWebhookAPIKey: value("LOGIN_WEBHOOK_API_KEY"),
            loginWebhookIDField: value("LOGIN_WEBHOOK_ID_FIELD").map { $0 == "none" ? nil : $0 } ?? "id",
            stripeAPIBase: value("STRIPE_API_BASE") ?? "https://api.stripe.com",
            stripeSecretKey: value("STRIPE_SECRET_KEY"), stripePriceTiers: tiers,
            scanResetTimeZone: value("SCAN_RESET_TIMEZONE").flatMap(TimeZone.init(identifier:)) ?? .gmt,
            photoRetention: .seconds(Int(value("PHOTO_RETENTION_DAYS") ?? "30").map { $0 * 86_400 } ?? 30 * 86_400),
            mailFrom: value("MAIL_FROM"))
    }
}
