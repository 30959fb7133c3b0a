import Foundation
import Queue

/// The `subscription-sync` kind (jobs/subscription-sync.yml). NOT IMPLEMENTED YET: being written in issue 4; its jobs fail permanently with
/// that reason, as they did with no handler.
public struct SubscriptionSyncJob: JobKind {
    public static let name = "subscription-sync"

    public struct Parameters: Decodable, Sendable {}

    let services: WorkerServices

    public init(services: WorkerServices) {
        self.services = services
    }

    public func run(_ parameters: Parameters, context: JobContext) async throws -> JSONValue? {
        throw JobFailure.permanent("the subscription-sync handler is not implemented yet")
    }
}
