import Accounts
import AppStore

/// Everything `carbscan serve` takes from its environment, read once at start-up into one value: auth, the API's own
/// settings, App Store verification, magic links.
package struct ServeSettings: Sendable {
    package var auth: AuthSettings
    package var api: APISettings
    /// Nil without `APPSTORE_BUNDLE_ID`.
    package var appStore: AppStoreSettings?
    /// Nil without `SMTP_URL`.
    package var magicLink: MagicLinkSettings?

    package init(
        auth: AuthSettings, api: APISettings = APISettings(), appStore: AppStoreSettings? = nil, magicLink: MagicLinkSettings? = nil
    ) {
        self.auth = auth
        self.api = api
        self.appStore = appStore
        self.magicLink = magicLink
    }
}
