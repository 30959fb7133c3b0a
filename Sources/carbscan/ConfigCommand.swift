import API
import Accounts
import AppStore
import ArgumentParser
import Foundation
import Postgres
import Queue
import Settings
import Workers

/// `carbscan config check`: every setting as the processes would read it, secrets masked, and every refusal.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Configuration.", subcommands: [Check.self])

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the effective settings (secrets masked); exit 78 naming what is set but wrong.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let environment = EnvironmentReader.process
            var lines: [(String, String)] = []
            var problems: [String] = []
            func read<T>(_ what: String, _ body: () throws -> T) -> T? {
                do { return try body() } catch { problems.append("\(error)") }
                return nil
            }

            lines += [
                ("REDIS_URL", Self.masked(global.redisURL)), ("DATABASE_URL", Self.masked(global.databaseURL)),
                ("DATABASE_MIGRATION_URL", Self.masked(global.migrationDatabaseURL)),
                ("DATABASE_POOLER", environment.text("DATABASE_POOLER") ?? "(from the URL's pooler=, else none: direct)"),
                ("CARBSCAN_PREFIX", global.prefix), ("CARBSCAN_JOBS_DIR", global.jobsDir),
            ]
            if let replicas = read("durable", { try global.durableReplicas() }) {
                lines.append(("CARBSCAN_DURABLE_ENQUEUE", replicas == 0 ? "0 (off)" : "\(replicas) replica(s)"))
            }
            if let timeout = read("durable timeout", { try global.durableTimeout() }) {
                lines.append(("CARBSCAN_DURABLE_TIMEOUT_MS", "\(timeout)"))
            }
            let catalog = read("jobs") { try JobCatalog.load(directory: global.jobsDir) }
            if let catalog { lines.append(("job kinds", catalog.kinds.keys.sorted().joined(separator: ", "))) }
            if let port = read("port", { try SettingChecks.port(environment) }) { lines.append(("CARBSCAN_PORT", "\(port ?? 8080)")) }

            if let auth = read("auth", { try AuthSettings(environment: environment) }) {
                lines += [
                    ("JWT_SECRET", auth.usesEphemeralSecret ? "(unset: random per process)" : "set (\(auth.jwtSecret.count) bytes)"),
                    ("ACCESS_TOKEN_TTL", Self.seconds(auth.accessTokenLifetime)),
                    ("REFRESH_TOKEN_TTL", Self.seconds(auth.refreshTokenLifetime)),
                    ("APPLE_CLIENT_ID", auth.apple == nil ? "(unset: auth/apple answers 503)" : "set"),
                    ("OIDC_ISSUERS", "\(auth.extraIssuers.count) issuer(s)"), ("BCRYPT_COST", "\(auth.bcryptCost)"),
                    ("SESSION_CACHE_SECONDS", Self.seconds(auth.sessionCacheTTL)),
                    ("REFRESH_TOKEN_ROTATION", auth.refreshTokenRotation ? "true" : "false (seed 001: one refresh token per sign-in)"),
                    ("REFRESH_TOKEN_REUSE_INTERVAL", Self.seconds(auth.refreshTokenReuseInterval)),
                ]
            }
            if let api = read("api", { try APISettings(environment: environment) }) {
                lines += [
                    ("LOGIN_MAX_FAILURES", "\(api.maxLoginFailures)"), ("LOGIN_MAX_ATTEMPTS_PER_IP", "\(api.maxLoginAttemptsPerIP)"),
                    ("SYNC_WAIT_SECONDS", Self.seconds(api.syncWait)), ("HTTP_IDLE_TIMEOUT_SECONDS", Self.seconds(api.idleTimeout)),
                    ("EVENT_STREAM_HEARTBEAT_SECONDS", Self.seconds(api.eventHeartbeat)),
                    ("EVENT_STREAM_MAX_SECONDS", Self.seconds(api.eventStreamMaxDuration)),
                    ("SCAN_RESET_TIMEZONE", api.scanResetTimeZone.identifier),
                    ("STRIPE_WEBHOOK_SECRET", api.stripeWebhookSecret == nil ? "(unset: webhooks/stripe answers 503)" : "set"),
                    (
                        "TRUSTED_PROXIES",
                        api.trustedProxies.blocks.isEmpty
                            ? "(none: the socket peer is the client)" : api.trustedProxies.blocks.map(\.description).joined(separator: ",")
                    ),
                    ("OPS_USER", api.opsCredentials.map { "\($0.user) (dashboard at /ops/)" } ?? "(unset: /ops/ answers 404)"),
                ]
                if let catalog { _ = read("scan-reset") { try SettingChecks.scanResetZone(api.scanResetTimeZone, catalog: catalog) } }
            }
            if let magicLink = read("magic link", { try MagicLinkSettings(environment: environment) }) {
                lines.append(
                    ("SMTP_URL", magicLink == nil ? "(unset: magic links answer 503)" : Self.masked(environment.text("SMTP_URL") ?? "")))
                if let magicLink {
                    lines += [
                        ("MAGIC_LINK_URL", magicLink.linkTemplate), ("MAGIC_LINK_MAX_PER_EMAIL", "\(magicLink.maxPerEmail)"),
                        ("MAGIC_LINK_MAX_PER_IP", "\(magicLink.maxPerIP)"),
                    ]
                }
            }
            if let read = read("read replicas", { try ReadReplicaSettings(environment: environment) }) {
                if let read {
                    lines += [
                        ("DATABASE_READ_URL", read.replicas.map(\.description).joined(separator: ",")),
                        ("DATABASE_READ_MAX_LAG_SECONDS", Self.seconds(read.options.maxLag)),
                        ("DATABASE_READ_POOL_SIZE", "\(read.options.poolSize) per replica"),
                    ]
                } else {
                    lines.append(("DATABASE_READ_URL", "(unset: every query on DATABASE_URL)"))
                }
            }
            if let appStore = read("app store", { try AppStoreSettings(environment: environment) }) {
                lines.append(("APPSTORE_BUNDLE_ID", appStore == nil ? "(unset: App Store routes answer 503)" : "set"))
            }
            if let workers = read("workers", { try WorkerSettings(environment: environment) }) {
                lines += [
                    ("AI_BASE_URL", workers.aiBaseURL ?? "(unset: analysis and chat jobs die as misconfigured)"),
                    ("AI_API_KEY", workers.aiAPIKey == nil ? "(unset)" : "set"), ("AI_MODEL", workers.aiModel),
                    ("AI_MAX_TOKENS_ANALYSIS", "\(workers.aiMaxTokens(forKind: AnalysisJob.name))"),
                    ("AI_MAX_TOKENS_CHAT", "\(workers.aiMaxTokens(forKind: ChatJob.name))"),
                    ("LOGIN_WEBHOOK_URL", workers.loginWebhookURL ?? "(unset: no login events sent)"),
                    ("LOGIN_WEBHOOK_API_KEY", workers.loginWebhookAPIKey == nil ? "(unset)" : "set"),
                    ("LOGIN_WEBHOOK_ID_FIELD", workers.loginWebhookIDField ?? "none"), ("STRIPE_API_BASE", workers.stripeAPIBase),
                    ("STRIPE_SECRET_KEY", workers.stripeSecretKey == nil ? "(unset)" : "set"),
                    (
                        "STRIPE_PRICE_TIERS",
                        workers.stripePriceTiers.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
                    ),
                    ("PHOTO_RETENTION_DAYS", "\(Int(workers.photoRetention.components.seconds / 86_400))"), ("MAIL_FROM", workers.mailFrom),
                ]
                if let push = workers.push {
                    lines += [
                        ("APNS_URL", push.url), ("APNS_TOPIC", push.topic), ("APNS_KEY_ID", push.keyID), ("APNS_TEAM_ID", push.teamID),
                        ("APNS_KEY_PATH", "set (a P-256 key)"), ("APNS_CA_FILE", push.caFile ?? "(unset: the system's roots)"),
                    ]
                } else {
                    lines.append(("APNS_KEY_PATH", "(unset: no iOS pushes)"))
                }
                if let fcm = workers.fcm {
                    lines += [
                        ("FCM_SERVICE_ACCOUNT_FILE", "\(fcm.clientEmail) (project \(fcm.projectID))"), ("FCM_URL", fcm.url),
                        ("FCM_CA_FILE", fcm.caFile ?? "(unset: the system's roots)"),
                    ]
                } else {
                    lines.append(("FCM_SERVICE_ACCOUNT_FILE", "(unset: no Android pushes)"))
                }
            }

            let width = lines.map(\.0.count).max() ?? 0
            var out = ""
            for (name, value) in lines { out += name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value + "\n" }
            FileHandle.standardOutput.write(Data(out.utf8))
            guard problems.isEmpty else {
                FileHandle.standardError.write(Data(problems.map { "error: configuration: \($0)\n" }.joined().utf8))
                throw ExitCode(78)
            }
        }

        static func seconds(_ duration: Duration) -> String {
            let (whole, fraction) = duration.components
            let value = Double(whole) + Double(fraction) / 1e18
            return value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
        }

        /// A URL with its password replaced by `***`.
        static func masked(_ url: String) -> String {
            guard var components = URLComponents(string: url), components.password != nil else { return url }
            components.password = "***"
            return components.string ?? "(unreadable URL)"
        }
    }
}
