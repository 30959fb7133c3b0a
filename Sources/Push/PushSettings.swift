import Crypto

/// How workers reach the APNs provider API (`APNS_*`): all of key, key id, team and topic, or none (pushes off).
package struct PushSettings: Sendable {
    /// `https://api.push.apple.com`, or `https://api.sandbox.push.apple.com` for development builds; no trailing slash.
    package var url: String
    /// The app's bundle id, sent as `apns-topic`: APNs refuses a token issued for another app.
    package var topic: String
    /// The id of the team's APNs key (the `kid` of the provider token).
    package var keyID: String
    /// The Apple developer team (the `iss` of the provider token).
    package var teamID: String
    /// The team's APNs key (the `.p8` file, PKCS#8 P-256): it signs the provider token and is never logged.
    package var key: P256.Signing.PrivateKey
    /// Certificate authorities to trust for `url` instead of the system's (a test's own peer); nil in production.
    package var caFile: String?

    /// The key of a `.p8` file (PKCS#8 PEM, as Apple hands it out; SEC1 `EC PRIVATE KEY` PEM is taken too).
    package static func signingKey(pem: String) throws -> P256.Signing.PrivateKey {
        try P256.Signing.PrivateKey(pemRepresentation: pem)
    }

    package static let productionURL = "https://api.push.apple.com"
    package static let sandboxURL = "https://api.sandbox.push.apple.com"

    package init(
        url: String = PushSettings.productionURL, topic: String, keyID: String, teamID: String, key: P256.Signing.PrivateKey,
        caFile: String? = nil
    ) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.topic = topic
        self.keyID = keyID
        self.teamID = teamID
        self.key = key
        self.caFile = caFile
    }
}
