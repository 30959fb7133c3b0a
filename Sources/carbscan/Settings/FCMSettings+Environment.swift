import Foundation
import Push
import Settings

extension FCMSettings {
    /// Nil when `FCM_SERVICE_ACCOUNT_FILE` is unset (Android devices get no pushes). The file is the Firebase project's
    /// service account as Google hands it out, read and checked at start-up (its key never reaches a message).
    /// `FCM_URL` (`https://fcm.googleapis.com`), `FCM_CA_FILE` (certificate authorities to trust instead of the
    /// system's, for the FCM and token endpoints: tests).
    package init?(environment: EnvironmentReader) throws(SettingError) {
        guard let path = environment.text("FCM_SERVICE_ACCOUNT_FILE") else { return nil }
        guard let json = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw SettingError("FCM_SERVICE_ACCOUNT_FILE", "cannot read \(path)")
        }
        let url = environment.baseURL("FCM_URL") ?? Self.defaultURL
        guard url.hasPrefix("https://") else {
            throw SettingError("FCM_URL", "must be an https URL such as \(Self.defaultURL), not '\(url)'")
        }
        var caFile: String?
        if let file = environment.text("FCM_CA_FILE") {
            guard FileManager.default.isReadableFile(atPath: file) else { throw SettingError("FCM_CA_FILE", "cannot read \(file)") }
            caFile = file
        }
        do {
            try self.init(serviceAccount: json, url: url, caFile: caFile)
        } catch {
            throw SettingError("FCM_SERVICE_ACCOUNT_FILE", "\(path) \(error)")
        }
    }
}
