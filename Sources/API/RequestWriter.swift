import Synchronization

/// Who an authenticated request acts for, noted by the `Authenticator` while the request runs, so that the route
/// table can mark their write once the handler is done. Only requests that may write (not GET) carry one.
final class RequestWriter: Sendable {
    @TaskLocal static var current: RequestWriter?

    private let user = Mutex<String?>(nil)

    var userID: String? { user.withLock { $0 } }

    /// Notes the caller of the running request (nothing outside a request that may write).
    static func note(_ userID: String) {
        current?.user.withLock { $0 = userID }
    }
}
