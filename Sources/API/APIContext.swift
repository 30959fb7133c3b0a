import Hummingbird

/// The request context of the mobile API: Hummingbird's core storage plus the peer's address, which the login
/// throttle keys on.
package struct APIContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// The client's IP address, or nil when the transport has none (router tests).
    package let remoteIP: String?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteIP = source.channel.remoteAddress?.ipAddress
    }

    /// Bodies larger than this are refused before they are read whole (413).
    package var maxUploadSize: Int { APIContext.maxJSONBodyBytes }

    package static let maxJSONBodyBytes = 1 << 20
}
