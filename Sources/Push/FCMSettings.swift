import CryptoExtras
import Foundation
import JSON

/// How workers reach FCM's HTTP v1 API (`FCM_*`): a service account of the Firebase project, as Google hands it out
/// (a JSON file with `project_id`, `client_email`, `private_key`, `token_uri`).
package struct FCMSettings: Sendable {
    /// `https://fcm.googleapis.com`: messages go to `{url}/v1/projects/{projectID}/messages:send`.
    package var url: String
    package var projectID: String
    /// The service account (the `iss` of the token request).
    package var clientEmail: String
    /// Its key (RS256), never logged.
    package var key: _RSA.Signing.PrivateKey
    /// The key's id (`kid`), when the file names one.
    package var keyID: String?
    /// Google's OAuth 2.0 token endpoint, from the file (`https://oauth2.googleapis.com/token`).
    package var tokenURL: String
    /// Certificate authorities to trust instead of the system's (a test's own peer); nil in production.
    package var caFile: String?

    package static let defaultURL = "https://fcm.googleapis.com"

    package init(
        url: String = FCMSettings.defaultURL, projectID: String, clientEmail: String, key: _RSA.Signing.PrivateKey, keyID: String?,
        tokenURL: String, caFile: String? = nil
    ) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.key = key
        self.keyID = keyID
        self.tokenURL = tokenURL
        self.caFile = caFile
    }

    /// Reads a service account file's JSON; the error names the member that is missing or wrong, never the key.
    package init(serviceAccount json: String, url: String = FCMSettings.defaultURL, caFile: String? = nil) throws(FCMSettingsError) {
        guard let account = try? JSONValue(parsing: json) else { throw FCMSettingsError("is not JSON") }
        func member(_ name: String) throws(FCMSettingsError) -> String {
            guard case .string(let value)? = account[name], !value.isEmpty else { throw FCMSettingsError("has no \(name)") }
            return value
        }
        guard try member("type") == "service_account" else { throw FCMSettingsError("is not a service account (type)") }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: try member("private_key"))
        } catch let error as FCMSettingsError {
            throw error
        } catch {
            throw FCMSettingsError("has a private_key that is not a PEM RSA key of 2048 bits or more")
        }
        let tokenURL = try member("token_uri")
        guard tokenURL.hasPrefix("https://") else { throw FCMSettingsError("has a token_uri that is not https") }
        var keyID: String?
        if case .string(let id)? = account["private_key_id"] { keyID = id }
        self.init(
            url: url, projectID: try member("project_id"), clientEmail: try member("client_email"), key: key, keyID: keyID,
            tokenURL: tokenURL, caFile: caFile)
    }
}

/// Why a service account file cannot be used: `has no client_email`.
package struct FCMSettingsError: Error, CustomStringConvertible, Sendable {
    package var description: String
    init(_ description: String) { self.description = description }
}
