import Foundation
import HTTPTypes
import Hummingbird
import JobContracts
import Outbox
import Postgres
import Queue

/// `devices/register` and `devices/unregister` (seed 001): validated here, stored by a `push-registration` job.
///
/// The answer keeps seed 001's synchronous shape when the job finishes within `wait` (200 with the row's real
/// `deviceId`); when it does not, or the client sent `Prefer: respond-async`, it is 202 with the job id and
/// `Location: /jobs/{id}`. Authentication is optional, but a token that is sent must be valid: a device is the
/// user's only when the caller proved who they are. `devices/register` honours `Idempotency-Key` (per user; callers
/// without a token share one key space): a retry answers with the first request's job.
struct DeviceRoutes {
    let database: PostgresClient
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator
    let idempotency: IdempotentRequests
    /// How long a request waits for its job before answering 202.
    var wait: Duration = .seconds(5)

    func register(on api: RouteTable) {
        api.post("devices/register", registerDevice)
        api.post("devices/unregister", unregisterDevice)
    }

    struct RegisterBody: Decodable {
        var deviceToken: String
        var platform: String
        var deviceModel: String?
        var osVersion: String?
        var appVersion: String?
    }

    struct UnregisterBody: Decodable {
        var deviceToken: String
    }

    struct Registered: Encodable {
        var registered: Bool
        var deviceId: String
    }

    struct Unregistered: Encodable {
        var unregistered: Bool
    }

    struct Pending: Encodable {
        var registered: Bool?
        var unregistered: Bool?
        var jobId: String
        var status: String
    }

    func registerDevice(_ request: Request, _ context: APIContext) async throws -> Response {
        let owner = try await optionalUser(request)
        let body = try await JSONBody.decode(
            RegisterBody.self, from: request, allowedKeys: ["deviceToken", "platform", "deviceModel", "osVersion", "appVersion"])
        guard let platform = DevicePlatform(rawValue: body.platform) else {
            throw APIError.validation("platform", "field 'platform' must be one of ios, android")
        }
        let token = try DevicePlatform.checkedToken(body.deviceToken, for: platform)
        let parameters = PushRegistrationContract.Parameters(
            action: .register, userId: owner, platform: platform, token: token,
            deviceModel: try Field.text(body.deviceModel, "deviceModel", max: 100),
            osVersion: try Field.text(body.osVersion, "osVersion", max: 50),
            appVersion: try Field.text(body.appVersion, "appVersion", max: 50))
        let fingerprint = IdempotentRequests.fingerprint([
            platform.rawValue, token, parameters.deviceModel, parameters.osVersion, parameters.appVersion,
        ])
        let key: IdempotentRequests.Key?
        switch try await idempotency.start(request, userID: owner, route: "devices/register", fingerprint: fingerprint) {
        case .job(let id): return try await registration(id, request)
        case .replay(let response): return response
        case .owner(let owned): key = owned
        case .unkeyed: key = nil
        }
        let id: JobID
        do {
            if let key {
                // The key and its job commit together (the outbox), so a retry never finds a key without its job.
                let outbox = JobOutbox(database: database, queue: queue)
                let job = try JobOutbox.Job(PushRegistrationContract.self, parameters, owner: owner)
                try await database.transaction { tx in
                    try await outbox.add(job, in: tx)
                    try await idempotency.attach(key, job: job.id, in: tx)
                }
                await outbox.deliver(job)
                id = job.id
            } else {
                id = try await enqueue(parameters, owner: owner)
            }
        } catch {
            if let key { await idempotency.release(key) }
            throw error
        }
        return try await registration(id, request)
    }

    /// The answer of a registration job: the device's id once it is stored, else 202.
    private func registration(_ id: JobID, _ request: Request) async throws -> Response {
        let record = try await outcome(of: id, request)
        if let record, record.status == .succeeded, let deviceID = try record.result(as: PushRegistrationContract.self)?.deviceId {
            return try Envelope.success(Registered(registered: true, deviceId: deviceID))
        }
        return try pending(id, Pending(registered: false, jobId: id.rawValue, status: record?.status.rawValue ?? "queued"))
    }

    func unregisterDevice(_ request: Request, _ context: APIContext) async throws -> Response {
        let owner = try await optionalUser(request)
        let body = try await JSONBody.decode(UnregisterBody.self, from: request, allowedKeys: ["deviceToken"])
        // Either platform's format: the row is found by token alone.
        let token = try Field.text(body.deviceToken, "deviceToken", max: DevicePlatform.maxTokenLength, required: true)!
        let id = try await enqueue(.init(action: .unregister, token: token), owner: owner)
        let record = try await outcome(of: id, request)
        if record?.status == .succeeded {
            return try Envelope.success(Unregistered(unregistered: true))
        }
        return try pending(id, Pending(unregistered: false, jobId: id.rawValue, status: record?.status.rawValue ?? "queued"))
    }

    /// The caller's user id when a token is sent (a bad one is 401, never silently anonymous), else nil. A valid
    /// token of an extra issuer whose identity has no account yet registers the device without an owner.
    private func optionalUser(_ request: Request) async throws -> String? {
        guard request.headers[.authorization] != nil else { return nil }
        switch try await authenticator.identify(request) {
        case .account(let caller): return caller.user.id
        case .unlinked: return nil
        }
    }

    private func enqueue(_ parameters: PushRegistrationContract.Parameters, owner: String?) async throws -> JobID {
        let result = try await queue.enqueue(
            PushRegistrationContract.self, parameters, options: EnqueueOptions(owner: owner, indexed: true))
        guard let id = result.id else { throw APIError(.internalServerError, "SERVER_ERROR", "the registration was not queued") }
        return id
    }

    /// Waits for the job (unless the client asked not to): its record as it stands then; none when Redis went away
    /// after the job was accepted (the client gets the job, 202, not a 503 that would make it register again).
    private func outcome(of id: JobID, _ request: Request) async throws -> JobRecord? {
        // RFC 7240: the client would rather have the job id now than wait.
        let respondAsync = request.headers[values: HTTPField.Name("Prefer")!].contains { $0.lowercased().contains("respond-async") }
        do {
            let waited = respondAsync ? try await queue.record(id) : try await waiter.wait(for: id, timeout: wait)
            guard let record = waited else { throw APIError(.internalServerError, "SERVER_ERROR", "the registration job vanished") }
            return record
        } catch  where APIError.isOutage(error) {
            return nil
        }
    }

    private func pending(_ id: JobID, _ body: Pending) throws -> Response {
        var headers = HTTPFields()
        headers[.location] = "\(RouteTable.basePath)/jobs/\(id.rawValue)"
        return try Envelope.success(body, status: .accepted, headers: headers)
    }
}

/// A push platform, as `push-registration` jobs store it.
typealias DevicePlatform = PushRegistrationContract.Platform

/// The shape of each platform's device tokens, checked before anything is queued.
extension DevicePlatform {
    /// FCM registration tokens have no documented maximum; this bound keeps a row (and a job) small.
    static let maxTokenLength = 4096

    /// The token if it has the platform's format, exactly (white space included, as the document's patterns say):
    /// APNs device tokens are hex (32 bytes today, up to 100 bytes allowed by Apple), FCM registration tokens are
    /// URL-safe text with `:` (about 150 characters today).
    static func checkedToken(_ token: String, for platform: DevicePlatform) throws -> String {
        let valid: Bool
        let rule: String
        switch platform {
        case .ios:
            valid = (64...200).contains(token.utf8.count) && token.utf8.allSatisfy { $0.isHexDigit }
            rule = "an APNs device token: 64 to 200 hexadecimal characters"
        case .android:
            valid = (100...maxTokenLength).contains(token.utf8.count) && token.utf8.allSatisfy { $0.isFCMTokenCharacter }
            rule = "an FCM registration token: 100 to \(maxTokenLength) characters of A-Z, a-z, 0-9, '_', '-', ':'"
        }
        guard valid else { throw APIError.validation("deviceToken", "field 'deviceToken' must be \(rule)") }
        return token
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }

    fileprivate var isFCMTokenCharacter: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) || self == UInt8(ascii: "_") || self == UInt8(ascii: "-")
            || self == UInt8(ascii: ":")
    }
}
