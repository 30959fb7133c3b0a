import Foundation
import Push
import Settings

extension PushSettings {
    /// The key, team and topic together make APNs' configuration: nil when `APNS_KEY_PATH`, `APNS_KEY_ID`,
    /// `APNS_TEAM_ID` and `APNS_TOPIC` are all unset (pushes off); some of them set and not all is a start-up error.
    /// `APNS_URL` (`https://api.push.apple.com` by default; `https://api.sandbox.push.apple.com` for development
    /// builds), `APNS_CA_FILE` (certificate authorities to trust instead of the system's: tests). The key file must
    /// be readable and hold a PKCS#8 P-256 key (the `.p8` Apple hands out); its content never reaches a message.
    package init?(environment: EnvironmentReader) throws(SettingError) {
        let required = ["APNS_KEY_PATH", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC"]
        let set = required.filter { environment.text($0) != nil }
        guard !set.isEmpty else { return nil }
        guard set.count == required.count else {
            let missing = required.filter { !set.contains($0) }
            throw SettingError(
                missing[0],
                "is unset while \(set.joined(separator: ", ")) \(set.count == 1 ? "is" : "are") set: APNs needs all of \(required.joined(separator: ", ")) (or none, for no pushes)"
            )
        }
        let path = environment.text("APNS_KEY_PATH")!
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw SettingError("APNS_KEY_PATH", "cannot read \(path)")
        }
        guard let key = try? Self.signingKey(pem: pem) else {
            throw SettingError("APNS_KEY_PATH", "\(path) is not a PEM P-256 private key (the .p8 file of an APNs key)")
        }
        let url = environment.baseURL("APNS_URL") ?? Self.productionURL
        guard let components = URLComponents(string: url), components.scheme == "https", components.host?.isEmpty == false else {
            throw SettingError("APNS_URL", "must be an https URL such as \(Self.productionURL), not '\(url)'")
        }
        var caFile: String?
        if let path = environment.text("APNS_CA_FILE") {
            guard FileManager.default.isReadableFile(atPath: path) else { throw SettingError("APNS_CA_FILE", "cannot read \(path)") }
            caFile = path
        }
        self.init(
            url: url, topic: environment.text("APNS_TOPIC")!, keyID: environment.text("APNS_KEY_ID")!,
            teamID: environment.text("APNS_TEAM_ID")!, key: key, caFile: caFile)
    }
}
