import Foundation
import Postgres
import Queue
import Store

/// The `push-registration` kind (jobs/push-registration.yml): stores or removes a device's push token, one row per
/// token (seed 001 `devices/register`, `devices/unregister`). The API has checked the token's format already.
///
/// Both actions are idempotent, so a re-delivered job changes nothing: registering upserts by token (a token that
/// moved to another user moves with its row and keeps its id), unregistering an absent token succeeds.
public struct PushRegistrationJob: JobKind {
    public static let name = "push-registration"

    public struct Parameters: Decodable, Sendable {
        public var action: String
        public var userId: String?
        public var platform: String?
        public var token: String
        public var deviceModel: String?
        public var osVersion: String?
        public var appVersion: String?
    }

    let services: WorkerServices

    public init(services: WorkerServices) {
        self.services = services
    }

    public func run(_ parameters: Parameters, context: JobContext) async throws -> JSONValue? {
        let devices = Devices(services.database)
        switch parameters.action {
        case "register":
            guard let platform = parameters.platform, ["ios", "android"].contains(platform) else {
                throw JobFailure.permanent("register needs a platform of ios or android")
            }
            do {
                let id = try await devices.register(
                    token: parameters.token, userID: parameters.userId, platform: platform, deviceModel: parameters.deviceModel,
                    osVersion: parameters.osVersion, appVersion: parameters.appVersion)
                return ["deviceId": .string(id.uuidString.lowercased())]
            } catch let error as PostgresError where error.sqlState == "23503" {
                // The account was deleted between the request and now: nothing to attach the device to, ever.
                throw JobFailure.permanent("the device's user no longer exists")
            }
        case "unregister":
            let removed = try await devices.unregister(token: parameters.token)
            return ["unregistered": true, "removed": .bool(removed)]
        default:
            throw JobFailure.permanent("unknown action '\(parameters.action)' (expected register or unregister)")
        }
    }
}
