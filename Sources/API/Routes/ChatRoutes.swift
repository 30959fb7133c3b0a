import Foundation
import Hummingbird
import Postgres
import Store

/// `chat/history`: the caller's conversation, newest first.
struct ChatRoutes {
    let database: PostgresClient
    let authenticator: Authenticator

    func register(on api: RouteTable) {
        api.get("chat/history", history)
    }

    struct Message: Encodable {
        var id: Int64
        var message: String
        var response: String
        var messageType: String
        var createdAt: Date
    }

    struct History: Encodable {
        var messages: [Message]
        var count: Int
    }

    func history(_ request: Request, _ context: APIContext) async throws -> Response {
        let user = try await authenticator.caller(request).user
        let limit = try request.integer("limit", default: 50, in: 1...200)
        let messages = try await ChatMessages(database).history(userID: user.id, limit: limit).map {
            Message(id: $0.id, message: $0.message, response: $0.response, messageType: $0.messageType, createdAt: $0.createdAt)
        }
        return try Envelope.success(History(messages: messages, count: messages.count))
    }
}
