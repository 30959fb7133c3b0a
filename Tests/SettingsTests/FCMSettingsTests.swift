import CryptoExtras
import Foundation
import Push
import Settings
import Testing
import carbscan

/// `FCM_*`: a readable service account file of Google's shape, checked at start-up; unset, no Android pushes.
@Suite struct FCMSettingsTests {
    static func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-\(UUID().uuidString).json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func account(dropping member: String? = nil, tokenURI: String = "https://oauth2.googleapis.com/token") throws -> String {
        var account: [String: Any] = [
            "type": "service_account", "project_id": "carbscan-prod", "private_key_id": "abc",
            "private_key": try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation,
            "client_email": "push@carbscan-prod.iam.gserviceaccount.com", "token_uri": tokenURI,
        ]
        if let member { account[member] = nil }
        return String(decoding: try JSONSerialization.data(withJSONObject: account), as: UTF8.self)
    }

    @Test func unsetMeansNoAndroidPushes() throws {
        #expect(try FCMSettings(environment: ["FCM_URL": "https://fcm.googleapis.com"]) == nil)
    }

    @Test func aGoodServiceAccountIsRead() throws {
        let read = try #require(try FCMSettings(environment: ["FCM_SERVICE_ACCOUNT_FILE": try Self.file(try Self.account())]))
        #expect(read.projectID == "carbscan-prod" && read.clientEmail == "push@carbscan-prod.iam.gserviceaccount.com")
        #expect(read.tokenURL == "https://oauth2.googleapis.com/token" && read.url == "https://fcm.googleapis.com" && read.keyID == "abc")
    }

    @Test(arguments: [
        ("/nonexistent/account.json", "FCM_SERVICE_ACCOUNT_FILE", "cannot read"), ("{not json", "FCM_SERVICE_ACCOUNT_FILE", "is not JSON"),
        ("drop:client_email", "FCM_SERVICE_ACCOUNT_FILE", "has no client_email"),
        ("drop:private_key", "FCM_SERVICE_ACCOUNT_FILE", "has no private_key"),
        ("http-token-uri", "FCM_SERVICE_ACCOUNT_FILE", "token_uri"), ("http-fcm-url", "FCM_URL", "https"),
    ])
    func aBadServiceAccountStopsStartUpNamingWhy(input: String, variable: String, words: String) throws {
        var environment: [String: String] = [:]
        switch input {
        case let drop where drop.hasPrefix("drop:"):
            environment["FCM_SERVICE_ACCOUNT_FILE"] = try Self.file(try Self.account(dropping: String(drop.dropFirst(5))))
        case "http-token-uri":
            environment["FCM_SERVICE_ACCOUNT_FILE"] = try Self.file(try Self.account(tokenURI: "http://oauth2.googleapis.com/token"))
        case "http-fcm-url":
            environment["FCM_SERVICE_ACCOUNT_FILE"] = try Self.file(try Self.account())
            environment["FCM_URL"] = "http://fcm.googleapis.com"
        case "/nonexistent/account.json": environment["FCM_SERVICE_ACCOUNT_FILE"] = input
        default: environment["FCM_SERVICE_ACCOUNT_FILE"] = try Self.file(input)
        }
        let refusal = #expect(throws: SettingError.self) { try FCMSettings(environment: EnvironmentReader(environment)) }
        #expect(refusal?.variable == variable && refusal?.description.contains(words) == true, "\(refusal?.description ?? "")")
        #expect(refusal?.description.contains("PRIVATE KEY") == false)
    }
}
