import Accounts
import AppStore

/// Everything `carbscan serve` takes from its environment, read once at start-up into one value: auth, the API's own
/// settings, App Store verification, magic links, read replicas.
package struct ServeSettings: Sendable {
    package var auth: AuthSettings
    package var api: APISettings
    /// Nil without `APPSTORE_BUNDLE_ID`.
    package var appStore: AppStoreSettings?
    /// Nil without `SMTP_URL`.
    package var magicLink: MagicLinkSettings?
    /// Nil without `DATABASE_READ_URL`: every query on the primary.
    package var readReplicas: ReadReplicaSettings?

    package init(
        auth: AuthSettings, api: APISettings = APISettings(), appStore: AppStoreSettings? = nil, magicLink: MagicLinkSettings? = nil,
        readReplicas: ReadReplicaSettings? = nil
    ) {
        self.auth = auth
        self.api = api
        self.appStore = appStore
        self.magicLink = magicLink
        self.readReplicas = readReplicas
    }
}
