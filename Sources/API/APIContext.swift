import Hummingbird
import NIOCore

/// The request context of the mobile API: Hummingbird's core storage plus the client's address, which the per-address
/// limits key on.
package struct APIContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// The socket peer, as its channel knew it when the request came; made text only when asked (`peerIP`): few routes
    /// need it, and its text was 0.35% of `POST /logins`'s CPU (perf, 2026-11-29).
    private let peerAddress: SocketAddress?
    /// The client a proxy of `TRUSTED_PROXIES` forwarded (`ClientAddressMiddleware`); nil: the peer is the client.
    private var forwardedIP: String?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress
    }

    /// The socket peer's IP address, or nil when the transport has none (router tests).
    package var peerIP: String? { peerAddress?.ipAddress }

    /// The client's IP address: the peer's, or behind a proxy of `TRUSTED_PROXIES` the one it forwarded
    /// (`ClientAddressMiddleware`).
    package var remoteIP: String? {
        get { forwardedIP ?? peerIP }
        set { forwardedIP = newValue }
    }

    /// Bodies larger than this are refused before they are read whole (413).
    package var maxUploadSize: Int { APIContext.maxJSONBodyBytes }

    package static let maxJSONBodyBytes = 1 << 20
}
