import Foundation
import Queue

/// The `push-registration` kind (jobs/push-registration.yml). NOT IMPLEMENTED YET: being written in issue 4; its jobs fail permanently with
/// that reason, as they did with no handler.
public struct PushRegistrationJob: JobKind {
    public static let name = "push-registration"

    public struct Parameters: Decodable, Sendable {}

    let services: WorkerServices

    public init(services: WorkerServices) {
        self.services = services
    }

    public func run(_ parameters: Parameters, context: JobContext) async throws -> JSONValue? {
        throw JobFailure.permanent("the push-registration handler is not implemented yet")
    }
}
