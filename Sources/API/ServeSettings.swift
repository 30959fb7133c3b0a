import Accounts
import AppStore

/// Everything `carbscan serve` takes from its environment, read once at start-up into one value: auth, the API's own
/// settings, App Store verification, magic links. A value that is set but wrong throws, naming its variable (the
/// command exits 78); `carbscan config check` reads the same parts one by one to list every such value at once.
package struct ServeSettings {
    package var auth: AuthConfiguration
    package var api: APISettings
    package var appStore: AppStoreConfiguration?
    package var magicLink: MagicLinkSettings?

    package static func fromEnvironment(_ environment: [String: String]) throws -> ServeSettings {
        ServeSettings(
            auth: try AuthConfiguration.fromEnvironment(environment), api: try APISettings.fromEnvironment(environment),
            appStore: try AppStoreConfiguration.fromEnvironment(environment),
            magicLink: try MagicLinkSettings.fromEnvironment(environment))
    }
}
