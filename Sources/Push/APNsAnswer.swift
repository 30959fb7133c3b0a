import Foundation
import JSON
import OutboundHTTP

/// What APNs answered one push: its status, `apns-id`, and for an error the `reason` of its JSON body
/// (`{"reason":"Unregistered","timestamp":1700000000000}`).
package struct APNsAnswer: Sendable {
    /// What the sender should do about the device, from Apple's table of status codes and reasons.
    package enum Verdict: Sendable, Equatable {
        /// 200: accepted for delivery.
        case accepted
        /// 410 (`Unregistered`, `ExpiredToken`) or 400 `BadDeviceToken`: the token is no longer valid; forget the device.
        case unregistered
        /// 429 (`TooManyRequests`, `TooManyProviderTokenUpdates`) or 5xx: try again later.
        case retry
        /// 403: the provider token or key is wrong (`InvalidProviderToken`, `ExpiredProviderToken`,
        /// `MissingProviderToken`, …): every push will be refused until the configuration is fixed.
        case configuration
        /// Any other refusal (400 `BadPayload`, `TopicDisallowed`, `DeviceTokenNotForTopic`, 413 …): this push will
        /// never be accepted; retrying cannot help.
        case refused
    }

    package var status: Int
    /// The notification's id at APNs (`apns-id`), to trace it with Apple.
    package var apnsID: String?
    /// Apple's error reason; nil on success.
    package var reason: String?
    /// For 410: when APNs last learnt that the token is no longer valid.
    package var unregisteredAt: Date?
    /// A `Retry-After` APNs sent, if any.
    package var retryAfter: Duration?

    package init(_ response: HTTPResponse) {
        status = response.status
        apnsID = response.header("apns-id")
        retryAfter = response.retryAfter()
        guard response.status != 200, !response.body.isEmpty,
            let body = try? JSONValue(parsing: String(decoding: response.body.prefix(4096), as: UTF8.self))
        else { return }
        if case .string(let reason)? = body["reason"] { self.reason = String(reason.prefix(100)) }
        switch body["timestamp"] {
        case .int(let milliseconds)?: unregisteredAt = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        case .double(let milliseconds)?: unregisteredAt = Date(timeIntervalSince1970: milliseconds / 1000)
        default: break
        }
    }

    package var verdict: Verdict {
        switch status {
        case 200: .accepted
        case 410: .unregistered
        case 400 where reason == "BadDeviceToken": .unregistered
        case 403: .configuration
        case 429, 500...: .retry
        default: .refused
        }
    }

    /// `410 Unregistered`, or the status alone when APNs gave no reason.
    package var summary: String { reason.map { "\(status) \($0)" } ?? "\(status)" }
}
