import Foundation
import JSON
import OutboundHTTP

/// What APNs answered one push: its status, `apns-id`, and for an error the `reason` of its JSON body
/// (`{"reason":"Unregistered","timestamp":1700000000000}`).
package struct APNsAnswer: PushAnswer {
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

    package var messageID: String? { apnsID }

    /// Apple's table of statuses and reasons: 410 (`Unregistered`, `ExpiredToken`) and 400 `BadDeviceToken` mean the
    /// token is gone; 429 (`TooManyRequests`, `TooManyProviderTokenUpdates`) and 5xx ask for a retry; 403 means the
    /// provider token or key is wrong (`InvalidProviderToken`, `ExpiredProviderToken`, `MissingProviderToken`, …);
    /// any other refusal (400 `BadPayload`, `TopicDisallowed`, `DeviceTokenNotForTopic`, 413 …) is final.
    package var verdict: PushVerdict {
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
