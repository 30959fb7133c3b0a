import API
import Accounts
import Foundation
import Settings
import Testing
import Workers
import carbscan

/// The executable's reading of each part's settings: defaults when unset, refusals that name the variable, and no
/// library module reading the environment behind the executable's back.
@Suite struct ProcessSettingsTests {
    @Test func workerSettingsFromTheEnvironment() throws {
        #expect(try WorkerSettings(environment: ["LOGIN_WEBHOOK_ID_FIELD": "none"]).loginWebhookIDField == nil)
        #expect(try WorkerSettings(environment: [:]).loginWebhookIDField == "id")
        #expect(try WorkerSettings(environment: ["AI_MAX_TOKENS_CHAT": "99"]).aiMaxTokens(forKind: "chat") == 99)
        #expect(try WorkerSettings(environment: [:]).aiMaxTokens(forKind: "analysis") == 700)
        let read = try WorkerSettings(environment: ["AI_BASE_URL": " http://127.0.0.1:9/ ", "AI_MODEL": "", "SMTP_URL": " "])
        #expect(read.aiBaseURL == "http://127.0.0.1:9")
        #expect(read.aiModel == "gpt-4o-mini")
        #expect(read.smtpURL == nil)
        let tokens = #expect(throws: SettingError.self) { try WorkerSettings(environment: ["AI_MAX_TOKENS_CHAT": "lots"]) }
        #expect(tokens?.variable == "AI_MAX_TOKENS_CHAT")
    }

    @Test func authSettingsFromTheEnvironment() throws {
        let unset = try AuthSettings(environment: ["JWT_SECRET": " "])
        #expect(unset.usesEphemeralSecret && unset.jwtSecret.count == 64)
        // Seed 001 fixes this refusal's wording.
        let production = #expect(throws: SettingError.self) { try AuthSettings(environment: ["CARBSCAN_ENV": "production"]) }
        #expect(production?.description == "FATAL: JWT_SECRET environment variable MUST be set in production")
        let secret = String(repeating: "s", count: 32)
        for (variable, value) in [
            ("ACCESS_TOKEN_TTL", "0"), ("BCRYPT_COST", "3"), ("SESSION_CACHE_SECONDS", "301"), ("OIDC_ISSUERS", "clerk.example.com"),
            ("JWT_SECRET", "short"),
        ] {
            var values = ["JWT_SECRET": secret]
            values[variable] = value
            let refusal = #expect(throws: SettingError.self) { try AuthSettings(environment: EnvironmentReader(values)) }
            #expect(refusal?.description.hasPrefix("\(variable): ") == true, "\(refusal?.description ?? "")")
        }
        let read = try AuthSettings(environment: [
            "JWT_SECRET": secret, "ACCESS_TOKEN_TTL": "60", "APPLE_CLIENT_ID": "com.a, com.b", "OIDC_ISSUERS": "https://clerk.example.com/",
        ])
        #expect(read.accessTokenLifetime == .seconds(60) && !read.usesEphemeralSecret)
        #expect(read.apple?.audiences == ["com.a", "com.b"])
        #expect(read.extraIssuers.map(\.jwksURL) == ["https://clerk.example.com/.well-known/jwks.json"])
    }

    @Test func magicLinksNeedAMailServer() throws {
        #expect(try MagicLinkSettings(environment: ["MAGIC_LINK_URL": "app://{token}"]) == nil)
        #expect(try MagicLinkSettings(environment: ["SMTP_URL": "smtp://127.0.0.1:25", "MAGIC_LINK_MAX_PER_IP": "4"])?.maxPerIP == 4)
        let template = #expect(throws: SettingError.self) {
            try MagicLinkSettings(environment: ["SMTP_URL": "smtp://127.0.0.1:25", "MAGIC_LINK_URL": "app://login"])
        }
        #expect(template?.variable == "MAGIC_LINK_URL")
    }

    @Test func readReplicasFromTheEnvironment() throws {
        #expect(try ReadReplicaSettings(environment: [:]) == nil)
        #expect(try ReadReplicaSettings(environment: ["DATABASE_READ_URL": " , "]) == nil)
        let read = try #require(
            try ReadReplicaSettings(environment: [
                "DATABASE_READ_URL": "postgres://app:s3cret@replica-a:5433/carbscan, postgresql://replica-b/carbscan?sslmode=require",
                "DATABASE_READ_MAX_LAG_SECONDS": "2.5", "DATABASE_READ_POOL_SIZE": "6",
            ]))
        #expect(read.replicas.map(\.host) == ["replica-a", "replica-b"])
        #expect(read.replicas[0].password == "s3cret" && read.replicas[1].sslMode == "require")
        #expect(read.options.maxLag == .milliseconds(2500) && read.options.poolSize == 6)
        #expect(try ReadReplicaSettings(environment: ["DATABASE_READ_URL": "postgres://r/db"])?.options.maxLag == .seconds(10))
        // Workers keep the API's write marks (a push marks its owner) for as long as the API does: 3 lag bounds.
        #expect(try WorkerSettings(environment: [:]).writeMarkLifetime == nil)
        #expect(try WorkerSettings(environment: ["DATABASE_READ_URL": "postgres://r/db"]).writeMarkLifetime == .seconds(30))
        #expect(
            try WorkerSettings(environment: ["DATABASE_READ_URL": "postgres://r/db", "DATABASE_READ_MAX_LAG_SECONDS": "2.5"])
                .writeMarkLifetime == .milliseconds(7500))
        // A bad URL is refused naming its place, never showing its password.
        let url = #expect(throws: SettingError.self) {
            try ReadReplicaSettings(environment: ["DATABASE_READ_URL": "postgres://r/db,mysql://u:hunter2@r/db"])
        }
        #expect(url?.variable == "DATABASE_READ_URL")
        #expect(
            url?.description.contains("replica 2 of 2") == true && url?.description.contains("hunter2") == false,
            "\(url?.description ?? "")")
        for (variable, value) in [
            ("DATABASE_READ_MAX_LAG_SECONDS", "0"), ("DATABASE_READ_POOL_SIZE", "0"), ("DATABASE_READ_POOL_SIZE", "x"),
        ] {
            let refusal = #expect(throws: SettingError.self) {
                try ReadReplicaSettings(environment: EnvironmentReader(["DATABASE_READ_URL": "postgres://r/db", variable: value]))
            }
            #expect(refusal?.variable == variable)
        }
    }

    /// The environment is read in `Sources/carbscan` through `EnvironmentReader` (`Sources/Settings`), nowhere else.
    @Test func noLibraryModuleReadsTheEnvironment() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var readers: [String] = []
        var scanned = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            let path = file.path.replacingOccurrences(of: sources.path + "/", with: "")
            guard !path.hasPrefix("carbscan/"), !path.hasPrefix("Settings/") else { continue }
            scanned += 1
            let text = try String(contentsOf: file, encoding: .utf8)
            for needle in ["processInfo.environment", "getenv(", "EnvironmentReader", "import Settings"] where text.contains(needle) {
                readers.append("\(path): \(needle)")
            }
        }
        #expect(scanned > 50)
        #expect(readers.isEmpty, "\(readers)")
    }
}
