import Foundation
import JSON
import JobContracts
import OutboundHTTP
import Push
import Queue
import ReadYourWrites
import Store

/// The `push` kind (jobs/push.yml): tells the owner's devices that an analysis or chat has ended, iOS devices through
/// APNs and Android devices through FCM (each when configured), unless a request of theirs was answered with its
/// result already (the job's seen mark, set by the API).
///
/// At most one push per device per job, however often the job runs: each device is claimed in `push_deliveries`
/// before its push is sent, and the claim is given back only when the provider surely did not take the push (429,
/// 5xx, no connection), so that a later attempt sends it. A call whose fate is unknown (a timeout, a connection lost
/// mid-call) keeps its claim: a push lost is better than one shown twice. A token the provider calls gone (APNs 410
/// or 400 `BadDeviceToken`, FCM `UNREGISTERED`) deletes the device; refused credentials (APNs 403, FCM 401/403 or a
/// refused service account) are said once per process per provider and make the job dead, after the other
/// provider's devices were pushed.
package struct PushJob: JobKind {
    package typealias Contract = PushContract

    let services: WorkerServices
    /// Whether this process has already said that APNs refuses its provider token (said once, not per job).
    private let providerTokenRefused = Notice()
    /// The same for FCM and the service account.
    private let serviceAccountRefused = Notice()

    package init(services: WorkerServices) {
        self.services = services
    }

    /// With read replicas the owner's next reads go to the primary until a replica has what the job wrote: the app,
    /// told by this push, reads the meal or chat next, maybe without asking the API for the job (which marks too).
    /// Best effort, as the API's marks are.
    private func markOwnersWrite(_ userID: String) async {
        guard let lifetime = services.settings.writeMarkLifetime else { return }
        do {
            try await WriteMarks(redis: services.redis, prefix: services.prefix, lifetime: lifetime)
                .markWrite(by: userID, on: services.database)
        } catch {
            services.logger.warning("could not mark a user's write for read-your-writes", metadata: ["error": "\(error)"])
        }
    }

    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        guard let jobID = JobID(rawValue: parameters.jobId), let jobUUID = UUID(uuidString: parameters.jobId) else {
            throw JobFailure.permanent("jobId is not a UUID")
        }
        let seen = QueueKeys(prefix: services.prefix, queue: parameters.queue).resultSeen(jobID)
        if try await services.redis.send(["EXISTS", seen]).int == 1 { return .init(sent: 0, skipped: "seen") }
        let platforms = [services.push == nil ? nil : "ios", services.fcm == nil ? nil : "android"].compactMap { $0 }
        guard !platforms.isEmpty else { return .init(sent: 0, skipped: "not configured") }
        await markOwnersWrite(parameters.userId)

        let deliveries = PushDeliveries(services.database)
        let notification = Self.notification(parameters)
        var result = Contract.Result(sent: 0)
        var retries: [String] = []
        var retryAfter: Duration?
        // Providers that refused our credentials in this attempt: their other devices are not tried (every push would
        // be refused alike), the other provider's still are.
        var misconfigured: [(provider: String, failure: JobFailure)] = []
        for device in try await deliveries.unclaimedDevices(jobID: jobUUID, userID: parameters.userId, platforms: platforms) {
            guard let client = client(for: device) else { continue }
            let provider = client.name
            if misconfigured.contains(where: { $0.provider == provider }) { continue }
            // The rate token and the request first: between the claim and the send nothing can fail or wait but the
            // call itself, so a claim is never held by an attempt that did not send.
            try await services.acquire(forKind: Self.name)
            let request: HTTPRequest
            do {
                request = try await client.request(notification, to: device.token)
            } catch let error as FCMError {
                if error.isRetryable {
                    retries.append("FCM: \(error)")
                } else {
                    misconfigured.append(("FCM", configurationError("FCM", "\(error)")))
                }
                continue
            }
            guard try await deliveries.claim(jobID: jobUUID, deviceID: device.id) else { continue }
            let answer: any PushAnswer
            do {
                answer = try await client.send(request)
            } catch {
                switch error.code {
                case .connect, .tls, .shutdown:
                    // The push never left: another attempt sends it.
                    try await deliveries.release(jobID: jobUUID, deviceID: device.id)
                    retries.append("\(provider) unreachable: \(error.message)")
                case .invalidURL, .invalidRequest:
                    // The client refused it (a token no URL can carry): it never left, and never will.
                    context.logger.warning(
                        "a push cannot be sent to this device", metadata: ["device": "\(device.id)", "error": "\(error)"])
                    result.refused = (result.refused ?? 0) + 1
                case .timeout, .transport, .cancelled, .responseTooLarge:
                    // It may have reached the provider: the claim stays, and no attempt sends it again.
                    context.logger.warning(
                        "a push ended without an answer; it is not sent again", metadata: ["device": "\(device.id)", "error": "\(error)"])
                }
                continue
            }
            switch answer.verdict {
            case .accepted:
                try await deliveries.accepted(jobID: jobUUID, deviceID: device.id, messageID: answer.messageID)
                result.sent += 1
            case .unregistered:
                try await Devices(services.database).remove(id: device.id, unregisteredAt: answer.unregisteredAt)
                result.unregistered = (result.unregistered ?? 0) + 1
            case .retry:
                try await deliveries.release(jobID: jobUUID, deviceID: device.id)
                retries.append("\(provider) answered \(answer.summary)")
                if let after = answer.retryAfter { retryAfter = max(retryAfter ?? .zero, after) }
            case .configuration:
                try await deliveries.release(jobID: jobUUID, deviceID: device.id)
                misconfigured.append((provider, configurationError(provider, answer.summary)))
            case .refused:
                context.logger.warning(
                    "\(provider) refused a push for good", metadata: ["device": "\(device.id)", "answer": "\(answer.summary)"])
                result.refused = (result.refused ?? 0) + 1
            }
        }
        // Only the devices given back are tried again: those sent, gone or refused keep their claims. A provider that
        // refused our credentials makes the job dead, once nothing is left that a retry could still deliver.
        if !retries.isEmpty {
            throw JobFailure.retryable(
                "\(retries.count) device(s) to try again (\(result.sent) sent): \(retries[0])", after: retryAfter)
        }
        if let first = misconfigured.first { throw first.failure }
        return result
    }

    /// The configured client for the device's platform.
    private func client(for device: Device) -> ProviderClient? {
        switch device.platform {
        case "ios": services.push.map(ProviderClient.apns)
        case "android": services.fcm.map(ProviderClient.fcm)
        default: nil
        }
    }

    /// The provider refuses our credentials: said once per process (every push fails alike until it is fixed), the
    /// job dead at once.
    private func configurationError(_ provider: String, _ answer: String) -> JobFailure {
        if provider == "APNs", let apns = services.push, providerTokenRefused.first() {
            services.logger.error(
                "APNs refuses this process's provider token: no push is sent until APNS_KEY_PATH, APNS_KEY_ID and APNS_TEAM_ID name a valid key",
                metadata: [
                    "answer": "\(answer)", "keyID": "\(apns.settings.keyID)", "teamID": "\(apns.settings.teamID)",
                    "url": "\(apns.settings.url)",
                ])
        }
        if provider == "FCM", let fcm = services.fcm, serviceAccountRefused.first() {
            services.logger.error(
                "FCM refuses this process's service account: no Android push is sent until FCM_SERVICE_ACCOUNT_FILE names a valid one",
                metadata: ["answer": "\(answer)", "account": "\(fcm.settings.clientEmail)", "project": "\(fcm.settings.projectID)"])
        }
        let credentials = provider == "APNs" ? "the provider token" : "the service account"
        return JobFailure.permanent("\(provider) refused \(credentials) (\(answer)): a configuration error")
    }

    /// What the device shows, by kind and end, and the ids the app opens the result with.
    static func notification(_ parameters: Parameters) -> APNsNotification {
        let title: String
        let body: String
        switch (parameters.kind, parameters.status) {
        case (.analysis, .succeeded): (title, body) = ("Your meal is analysed", "Open CarbScan to see its carbs.")
        case (.analysis, _): (title, body) = ("Your meal could not be analysed", "Open CarbScan to try again.")
        case (.chat, .succeeded): (title, body) = ("CarbScan answered", "Open CarbScan to read the answer.")
        case (.chat, _): (title, body) = ("Your question could not be answered", "Open CarbScan to ask again.")
        }
        return APNsNotification(
            title: title, body: body,
            custom: [
                "jobId": .string(parameters.jobId), "kind": .string(parameters.kind.rawValue),
                "status": .string(parameters.status.rawValue),
            ],
            collapseID: parameters.jobId)
    }
}

/// APNs or FCM, as the push loop uses them.
private enum ProviderClient {
    case apns(APNsClient)
    case fcm(FCMClient)

    var name: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        }
    }

    func request(_ notification: APNsNotification, to token: String) async throws -> HTTPRequest {
        switch self {
        case .apns(let client): try client.request(notification, to: token)
        case .fcm(let client): try await client.request(notification, to: token)
        }
    }

    func send(_ request: HTTPRequest) async throws(HTTPClientError) -> any PushAnswer {
        switch self {
        case .apns(let client): try await client.send(request)
        case .fcm(let client): try await client.send(request)
        }
    }
}
