import Hummingbird

/// The request context of the mobile API: Hummingbird's core storage plus the client's address, which the per-address
/// limits key on.
package struct APIContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// The socket peer's IP address, or nil when the transport has none (router tests).
    package let peerIP: String?
    /// The client's IP address: the peer's, or behind a proxy of `TRUSTED_PROXIES` the one it forwarded
    /// (`ClientAddressMiddleware`).
    package var remoteIP: String?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerIP = source.channel.remoteAddress?.ipAddress
        remoteIP = peerIP
    }

    /// Bodies larger than this are refused before they are read whole (413).
    package var maxUploadSize: Int { APIContext.maxJSONBodyBytes }

    package static let maxJSONBodyBytes = 1 << 20
}
