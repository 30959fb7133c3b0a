import Foundation
import Queue

/// The `chat` kind (jobs/chat.yml). NOT IMPLEMENTED YET: being written in issue 4; its jobs fail permanently with
/// that reason, as they did with no handler.
public struct ChatJob: JobKind {
    public static let name = "chat"

    public struct Parameters: Decodable, Sendable {}

    let services: WorkerServices

    public init(services: WorkerServices) {
        self.services = services
    }

    public func run(_ parameters: Parameters, context: JobContext) async throws -> JSONValue? {
        throw JobFailure.permanent("the chat handler is not implemented yet")
    }
}
