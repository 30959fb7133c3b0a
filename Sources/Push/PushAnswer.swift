import Foundation

/// What a push provider (APNs, FCM) answered one push, as the sender acts on it.
package protocol PushAnswer: Sendable {
    var verdict: PushVerdict { get }
    /// `410 Unregistered`, `404 UNREGISTERED`: the status and the provider's reason.
    var summary: String { get }
    /// The provider's id of the accepted message (`apns-id`, FCM's message `name`).
    var messageID: String? { get }
    /// A `Retry-After` the provider sent, if any.
    var retryAfter: Duration? { get }
    /// When the provider learnt the device's token is no longer valid, if it says.
    var unregisteredAt: Date? { get }
}

/// What the sender should do about a device after its push.
package enum PushVerdict: Sendable, Equatable {
    /// Accepted for delivery.
    case accepted
    /// The token is no longer valid: forget the device.
    case unregistered
    /// Try again later (throttled, the provider unavailable).
    case retry
    /// Our credentials are refused: every push will be until the configuration is fixed.
    case configuration
    /// This push will never be accepted; retrying cannot help.
    case refused
}
