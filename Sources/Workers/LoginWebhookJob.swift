import Foundation
import Queue

/// The `login-webhook` kind (jobs/login-webhook.yml). NOT IMPLEMENTED YET: being written in issue 4; its jobs fail permanently with
/// that reason, as they did with no handler.
public struct LoginWebhookJob: JobKind {
    public static let name = "login-webhook"

    public struct Parameters: Decodable, Sendable {}

    let services: WorkerServices

    public init(services: WorkerServices) {
        self.services = services
    }

    public func run(_ parameters: Parameters, context: JobContext) async throws -> JSONValue? {
        throw JobFailure.permanent("the login-webhook handler is not implemented yet")
    }
}
