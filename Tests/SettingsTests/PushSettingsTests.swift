import Foundation
import Push
import Settings
import Testing
import carbscan

/// `APNS_*`: all four of key, key id, team and topic or none; the key file readable and a P-256 key at start-up.
@Suite struct PushSettingsTests {
    /// A PKCS#8 P-256 key, as Apple's `.p8` files are (made with `openssl genpkey -algorithm EC`).
    static let p8 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5RywK+MQ7CNxNhDw
        7ClSBW+PQA4w3+Q2jNp2nP6vWA2hRANCAAT60svkhiPzr8n2B1boV4ZjTAmHXayu
        Tmoj9HIVF6CnNYruzPTL7RioSK56e+CfW7dwwQEmB/ED7F19nMBqKmcb
        -----END PRIVATE KEY-----
        """

    static func keyFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("apns-\(UUID().uuidString).p8").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func unsetMeansNoPushes() throws {
        #expect(try PushSettings(environment: [:]) == nil)
        #expect(try PushSettings(environment: ["APNS_URL": PushSettings.sandboxURL, "APNS_KEY_ID": " "]) == nil)
    }

    @Test func aPartialConfigurationNamesWhatIsMissing() throws {
        let refusal = #expect(throws: SettingError.self) {
            try PushSettings(environment: ["APNS_KEY_ID": "KEY1234567", "APNS_TOPIC": "com.carbscan.app"])
        }
        #expect(refusal?.variable == "APNS_KEY_PATH")
        #expect(refusal?.description.contains("APNS_TEAM_ID") == true, "\(refusal?.description ?? "")")
    }

    @Test func theKeyMustBeReadableAndAP256Key() throws {
        let base = ["APNS_KEY_ID": "KEY1234567", "APNS_TEAM_ID": "TEAM123456", "APNS_TOPIC": "com.carbscan.app"]
        var missing = base
        missing["APNS_KEY_PATH"] = "/nonexistent/AuthKey.p8"
        #expect(
            (#expect(throws: SettingError.self) { try PushSettings(environment: EnvironmentReader(missing)) })?.variable == "APNS_KEY_PATH")
        var garbage = base
        garbage["APNS_KEY_PATH"] = try Self.keyFile("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
        let refusal = #expect(throws: SettingError.self) { try PushSettings(environment: EnvironmentReader(garbage)) }
        #expect(refusal?.variable == "APNS_KEY_PATH" && refusal?.description.contains("BEGIN") == false)

        var good = base
        good["APNS_KEY_PATH"] = try Self.keyFile(Self.p8)
        let read = try #require(try PushSettings(environment: EnvironmentReader(good)))
        #expect(read.url == "https://api.push.apple.com" && read.topic == "com.carbscan.app" && read.caFile == nil)
        good["APNS_URL"] = "https://api.sandbox.push.apple.com/"
        #expect(try PushSettings(environment: EnvironmentReader(good))?.url == PushSettings.sandboxURL)
        good["APNS_URL"] = "http://api.push.apple.com"
        #expect((#expect(throws: SettingError.self) { try PushSettings(environment: EnvironmentReader(good)) })?.variable == "APNS_URL")
        good["APNS_URL"] = nil
        good["APNS_CA_FILE"] = "/nonexistent/ca.pem"
        #expect((#expect(throws: SettingError.self) { try PushSettings(environment: EnvironmentReader(good)) })?.variable == "APNS_CA_FILE")
    }
}
