import Foundation
import JobContracts
import Postgres
import Queue
import Store

/// The `push-registration` kind (jobs/push-registration.yml): stores or removes a device's push token, one row per
/// token (seed 001 `devices/register`, `devices/unregister`). The API has checked the token's format already.
///
/// Both actions are idempotent, so a re-delivered job changes nothing: registering upserts by token (a token that
/// moved to another user moves with its row and keeps its id), unregistering an absent token succeeds.
package struct PushRegistrationJob: JobKind {
    package typealias Contract = PushRegistrationContract

    let services: WorkerServices

    package init(services: WorkerServices) {
        self.services = services
    }

    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        let devices = Devices(services.database)
        switch parameters.action {
        case .register:
            guard let platform = parameters.platform else { throw JobFailure.permanent("register needs a platform of ios or android") }
            do {
                let id = try await devices.register(
                    token: parameters.token, userID: parameters.userId, platform: platform.rawValue, deviceModel: parameters.deviceModel,
                    osVersion: parameters.osVersion, appVersion: parameters.appVersion)
                return .init(deviceId: id.uuidString.lowercased())
            } catch let error as PostgresError where error.sqlState == "23503" {
                // The account was deleted between the request and now: nothing to attach the device to, ever.
                throw JobFailure.permanent("the device's user no longer exists")
            }
        case .unregister:
            let removed = try await devices.unregister(token: parameters.token)
            return .init(unregistered: true, removed: removed)
        }
    }
}
