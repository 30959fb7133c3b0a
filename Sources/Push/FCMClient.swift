import Foundation
import JSON
import Logging
import OutboundHTTP

/// Sends notifications to Android devices through FCM's HTTP v1 API: `POST {url}/v1/projects/{project}/messages:send`
/// with the service account's access token (``FCMAccessToken``), over libcurl on the client's own thread.
package struct FCMClient: Sendable {
    package let settings: FCMSettings
    package let token: FCMAccessToken
    let http: HTTPClient

    package init(
        settings: FCMSettings, logger: Logger, observer: (any HTTPClientObserver)? = nil, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.settings = settings
        self.http = HTTPClient(
            options: HTTPClientOptions(
                connectTimeout: .seconds(10), totalTimeout: .seconds(20), maxResponseBytes: 64 << 10, userAgent: "carbscan-push",
                maxConnectionsPerHost: 4, caBundlePath: settings.caFile),
            logger: logger, observer: observer)
        self.token = FCMAccessToken(settings: settings, http: http, clock: clock)
    }

    /// The push's request: the access token fetched (or taken from the cache) now, before the device is claimed.
    /// Throws ``FCMError`` when the token endpoint cannot be reached or refuses the service account.
    package func request(_ notification: APNsNotification, to deviceToken: String) async throws -> HTTPRequest {
        var data: [String: JSONValue] = [:]
        // FCM's `data` holds strings only.
        for (name, value) in notification.custom {
            if case .string(let text) = value { data[name] = .string(text) } else { data[name] = .string(value.jsonString) }
        }
        var android: [String: JSONValue] = ["priority": "HIGH", "ttl": "86400s"]
        if let collapseID = notification.collapseID { android["collapse_key"] = .string(collapseID) }
        let message: JSONValue = [
            "message": [
                "token": .string(deviceToken), "notification": ["title": .string(notification.title), "body": .string(notification.body)],
                "data": .object(data), "android": .object(android),
            ]
        ]
        return HTTPRequest(
            method: .post, url: "\(settings.url)/v1/projects/\(settings.projectID)/messages:send",
            headers: [("authorization", "Bearer \(try await token.current())"), ("content-type", "application/json; charset=utf-8")],
            body: Array(message.jsonString.utf8), provider: "fcm")
    }

    package func send(_ request: HTTPRequest) async throws(HTTPClientError) -> FCMAnswer {
        let answer = FCMAnswer(try await http.send(request))
        // A token FCM no longer takes (revoked, expired early): the next push fetches another.
        if answer.status == 401, answer.errorStatus == "UNAUTHENTICATED" { token.invalidate() }
        return answer
    }

    package func shutdown() { http.shutdown() }
}

/// FCM's answer: `{"name": "projects/p/messages/0:…"}`, or a `google.rpc.Status` error,
/// `{"error": {"code": 404, "message": "…", "status": "NOT_FOUND", "details": [{"@type": "…FcmError", "errorCode": "UNREGISTERED"}]}}`.
package struct FCMAnswer: PushAnswer {
    package var status: Int
    /// The message's name at FCM.
    package var messageID: String?
    /// `status` of the error (`NOT_FOUND`, `INVALID_ARGUMENT`, `UNAUTHENTICATED`, …).
    package var errorStatus: String?
    /// The FcmError detail's `errorCode` (`UNREGISTERED`, `QUOTA_EXCEEDED`, `THIRD_PARTY_AUTH_ERROR`, …).
    package var errorCode: String?
    package var retryAfter: Duration?
    package var unregisteredAt: Date? { nil }

    package init(_ response: HTTPResponse) {
        status = response.status
        retryAfter = response.retryAfter()
        let body = try? JSONValue(parsing: String(decoding: response.body.prefix(16_384), as: UTF8.self))
        if case .string(let name)? = body?["name"] { messageID = name }
        if case .string(let status)? = body?["error"]?["status"] { errorStatus = status }
        if case .array(let details)? = body?["error"]?["details"] {
            for detail in details {
                if case .string(let code)? = detail["errorCode"] { errorCode = code }
            }
        }
    }

    /// FCM's error codes: `UNREGISTERED` (404) means the token is gone; `QUOTA_EXCEEDED` (429), `UNAVAILABLE` (503)
    /// and `INTERNAL` (500) ask for a retry; `UNAUTHENTICATED` (401), `THIRD_PARTY_AUTH_ERROR` (401) and
    /// `PERMISSION_DENIED` (403) are our credentials; `INVALID_ARGUMENT`, `SENDER_ID_MISMATCH` … are final.
    package var verdict: PushVerdict {
        switch status {
        case 200: .accepted
        case 404 where errorCode == "UNREGISTERED" || errorStatus == "NOT_FOUND": .unregistered
        case 401: .configuration
        case 403 where errorCode != "SENDER_ID_MISMATCH": .configuration
        case 429, 500...: .retry
        default: .refused
        }
    }

    /// `404 UNREGISTERED`, or the status alone.
    package var summary: String { (errorCode ?? errorStatus).map { "\(status) \($0)" } ?? "\(status)" }
}
