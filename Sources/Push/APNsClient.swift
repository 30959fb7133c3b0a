import Durations
import Foundation
import Logging
import OutboundHTTP

/// Sends alert notifications through the APNs provider API: `POST {url}/3/device/{token}` over HTTP/2 (libcurl, on
/// the client's own thread: never the cooperative pool), authenticated by the team's provider token.
package struct APNsClient: Sendable {
    package let settings: PushSettings
    package let token: ProviderToken
    let http: HTTPClient

    /// - Parameters:
    ///   - clock: the provider token's clock (tests move it to see it renewed).
    ///   - observer: told of every call (`/metrics`, provider `apns`).
    package init(
        settings: PushSettings, logger: Logger, observer: (any HTTPClientObserver)? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.settings = settings
        self.token = ProviderToken(key: settings.key, keyID: settings.keyID, teamID: settings.teamID, clock: clock)
        // One connection carries every push as its streams, as Apple asks (up to 1,000 streams on one connection).
        self.http = HTTPClient(
            options: HTTPClientOptions(
                connectTimeout: .seconds(10), totalTimeout: .seconds(20), maxResponseBytes: 64 << 10, userAgent: "carbscan-push",
                maxConnectionsPerHost: 4, maxStreamsPerConnection: 500, caBundlePath: settings.caFile),
            logger: logger, observer: observer)
    }

    /// Sends one notification to one device. An APNs error is an answer, not a throw; only a call that got no answer
    /// (no connection, a timeout, TLS) throws.
    /// - Parameter deviceToken: the device's token, hex as the app registered it.
    package func send(_ notification: APNsNotification, to deviceToken: String, now: Date = Date()) async throws -> APNsAnswer {
        try await send(try request(notification, to: deviceToken, now: now))
    }

    /// Sends a request made by ``request(_:to:now:)``: the only failure left is the call's own.
    package func send(_ request: HTTPRequest) async throws(HTTPClientError) -> APNsAnswer {
        APNsAnswer(try await http.send(request))
    }

    /// The push's request, with the provider token signed (or taken from the cache) now: made before the device is
    /// claimed, so that nothing but the call itself can fail between the claim and the send.
    package func request(_ notification: APNsNotification, to deviceToken: String, now: Date = Date()) throws -> HTTPRequest {
        let expiration = now.addingTimeInterval((notification.expiresAfter ?? .seconds(86_400)).timeInterval)
        var headers: [(name: String, value: String)] = [
            ("authorization", "bearer \(try token.current())"), ("apns-topic", settings.topic), ("apns-push-type", "alert"),
            ("apns-priority", "10"), ("apns-expiration", String(Int64(expiration.timeIntervalSince1970))),
            ("content-type", "application/json"),
        ]
        if let collapseID = notification.collapseID { headers.append(("apns-collapse-id", collapseID)) }
        return HTTPRequest(
            method: .post, url: "\(settings.url)/3/device/\(deviceToken)", headers: headers, body: notification.payload, provider: "apns")
    }

    /// Stops the client's thread; pushes in flight fail. Dropping the last copy does the same.
    package func shutdown() { http.shutdown() }
}
