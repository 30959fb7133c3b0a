import Foundation
import Testing

/// A setting that is set but wrong stops the process at start-up with exit 78 (EX_CONFIG) naming the variable; it used
/// to fall back to its default silently. `carbscan config check` prints what would be used, secrets masked.
@Suite struct ConfigurationTests {
    static let jobs = (try? CarbScanBinary.jobsDirectory().path) ?? "jobs"

    @Test(arguments: [
        (["serve", "--port", "0"], "SYNC_WAIT_SECONDS", "99"), (["serve", "--port", "0"], "LOGIN_MAX_FAILURES", "ten"),
        (["serve", "--port", "0"], "HTTP_IDLE_TIMEOUT_SECONDS", "0"), (["serve", "--port", "0"], "SCAN_RESET_TIMEZONE", "Europe/Berln"),
        (["serve", "--port", "0"], "MAGIC_LINK_MAX_PER_IP", "-3"), (["serve"], "CARBSCAN_PORT", "http"),
        (["serve", "--port", "0"], "PHOTO_RETENTION_DAYS", "0"),
        (["work"], "AI_MAX_TOKENS_CHAT", "lots"), (["work"], "PHOTO_RETENTION_DAYS", "0"), (["work"], "STRIPE_PRICE_TIERS", "price_a"),
        (["schedule"], "SCAN_RESET_TIMEZONE", "Mars/Olympus"), (["serve", "--port", "0"], "CARBSCAN_DURABLE_ENQUEUE", "one"),
        (["work"], "CARBSCAN_DURABLE_ENQUEUE", "17"), (["jobs", "enqueue", "noop"], "CARBSCAN_DURABLE_TIMEOUT_MS", "0"),
        (["config", "check"], "CARBSCAN_DURABLE_TIMEOUT_MS", "soon"), (["serve", "--port", "0"], "REFRESH_TOKEN_ROTATION", "maybe"),
        (["serve", "--port", "0"], "ACCESS_TOKEN_TTL", "2.5"), (["config", "check"], "APPSTORE_ENVIRONMENTS", "Staging"),
        (["work"], "APNS_KEY_PATH", "/nonexistent/AuthKey.p8"), (["config", "check"], "APNS_KEY_PATH", "/nonexistent/AuthKey.p8"),
        (["serve", "--port", "0"], "DATABASE_READ_URL", "mysql://reader:hunter2@replica/carbscan"),
        (["config", "check"], "DATABASE_READ_URL", "postgres://r/db,postgres://r:99999/db"),
        (["serve", "--port", "0"], "DATABASE_READ_MAX_LAG_SECONDS", "0"),
        (["serve", "--port", "0"], "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), (["work"], "OTEL_TRACES_EXPORTER", "zipkin"),
        (["schedule"], "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"), (["work"], "TRACE_STATEMENTS", "sometimes"),
    ])
    func aWrongValueStopsTheProcessNamingIt(command: [String], variable: String, value: String) async throws {
        var environment = ["CARBSCAN_JOBS_DIR": Self.jobs, "CARBSCAN_PREFIX": "config-\(UUID().uuidString.prefix(8))", variable: value]
        if variable == "DATABASE_READ_MAX_LAG_SECONDS" { environment["DATABASE_READ_URL"] = "postgres://127.0.0.1:9/carbscan" }
        if variable.hasPrefix("MAGIC_LINK") { environment["SMTP_URL"] = "smtp://127.0.0.1:9" }
        if variable.hasPrefix("OTEL_") || variable.hasPrefix("TRACE_") { environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9" }
        if variable.hasPrefix("APPSTORE") { environment["APPSTORE_BUNDLE_ID"] = "com.carbscan.test" }
        if variable.hasPrefix("APNS") {
            for (name, value) in ["APNS_KEY_ID": "KEY1234567", "APNS_TEAM_ID": "TEAM123456", "APNS_TOPIC": "com.carbscan.test"] {
                environment[name] = environment[name] ?? value
            }
        }
        let result = try await CarbScanBinary.run(command, environment: environment, timeout: .seconds(20))
        #expect(result.status == 78, "\(command) with \(variable)=\(value): \(result.stderr)")
        #expect(result.stderr.contains("configuration: \(variable):"), "\(result.stderr)")
        #expect(!result.stderr.contains("hunter2"), "\(result.stderr)")
    }

    /// The zone of scan-reset periods and the zone its schedules fire in must agree.
    @Test func aScanResetZoneOtherThanTheSchedulesIsRefused() async throws {
        for command in [["work"], ["schedule"], ["config", "check"]] {
            let result = try await CarbScanBinary.run(
                command, environment: ["CARBSCAN_JOBS_DIR": Self.jobs, "SCAN_RESET_TIMEZONE": "Europe/Berlin"], timeout: .seconds(20))
            #expect(result.status == 78, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("scan-reset.yml"), "\(result.stderr)")
        }
    }

    @Test func configCheckPrintsTheSettingsWithSecretsMasked() async throws {
        let result = try await CarbScanBinary.run(
            ["config", "check"],
            environment: [
                "CARBSCAN_JOBS_DIR": Self.jobs, "REDIS_URL": "redis://:hunter2@127.0.0.1:6379/0", "AI_API_KEY": "sk-live-secret",
                "JWT_SECRET": String(repeating: "s3cr3t", count: 8), "SMTP_URL": "smtps://mailer:mailpass@smtp.example.com:465",
                "SYNC_WAIT_SECONDS": "2.5",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        for secret in ["hunter2", "sk-live-secret", "s3cr3t", "mailpass"] { #expect(!result.stdout.contains(secret), "\(secret) shown") }
        #expect(result.stdout.contains("redis://:***@127.0.0.1:6379/0"))
        #expect(result.stdout.contains("JWT_SECRET") && result.stdout.contains("set (48 bytes)"))
        #expect(result.stdout.contains("SYNC_WAIT_SECONDS") && result.stdout.contains("2.5"))
    }
}
