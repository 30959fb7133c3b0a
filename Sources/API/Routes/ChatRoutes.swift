import Foundation
import Hummingbird
import JSON
import JobContracts
import Postgres
import Queue
import Store

/// `chat` (seed 001): the message is counted against the day's limit (the user's time zone; none left:
/// `CHAT_LIMIT_REACHED`), then a `chat` job asks the AI; the answer comes like `analyze`'s (200 within the short
/// wait, else 202 with the job). `chat/history`: the caller's conversation, newest first.
struct ChatRoutes {
    let database: PostgresClient
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator
    let settings: ResultSettings

    static let maxMessageLength = 1000

    func register(on api: RouteTable) {
        api.post("chat", send)
        api.get("chat/history", history)
    }

    struct Answer: Encodable {
        var response: String
        var messageType: String
        var followUpQuestions: [String]
        var usage: ChatContract.Usage
    }

    func send(_ request: Request, _ context: APIContext) async throws -> Response {
        let user = try await authenticator.caller(request).user
        struct Body: Decodable { var message: String }
        let body = try await JSONBody.decode(Body.self, from: request, allowedKeys: ["message"])
        let message = try Field.text(body.message, "message", max: Self.maxMessageLength, required: true)!
        let limit = user.tier.chatsPerDay
        let day = UsageCounters.day(of: Date(), in: user.calendarTimeZone)
        let messageID = UUID.randomV4().lowercasedString
        // The chat is counted and reserved together; the job charges it when its answer is stored, or refunds it
        // when it dies, so a failed chat costs nothing.
        let taken = try await database.transaction { tx -> Int? in
            guard let used = try await ChatQuota(tx).take(userID: user.id, day: day, limit: limit) else { return nil }
            try await ChatReservations(tx).insert(messageID: messageID, userID: user.id, day: day)
            return used
        }
        guard let used = taken else {
            throw APIError(
                .tooManyRequests, "CHAT_LIMIT_REACHED",
                "You've reached your daily limit of AI chat questions. Upgrade to Pro for unlimited AI assistance!",
                details: [
                    "remainingChats": .int(0), "dailyLimit": limit.map(JSONValue.int) ?? .null,
                    "subscriptionTier": .string(user.tier.rawValue),
                ])
        }
        let parameters = ChatContract.Parameters(userId: user.id, messageId: messageID, message: message)
        let id: JobID
        do {
            guard let enqueued = try await queue.enqueue(ChatContract.self, parameters, options: EnqueueOptions(owner: user.id)).id else {
                throw StoreError("the chat message was not enqueued")
            }
            id = enqueued
            try await ChatReservations(database).attach(messageID: messageID, jobID: id.rawValue)
        } catch {
            // Nothing half-done: without a job the chat goes back.
            _ = try? await ChatReservations(database).refund(messageID: messageID)
            throw error
        }
        return try await JobAnswer.respond(request, job: id, waiter: waiter, settings: settings) { record in
            guard let stored = try? record.result(as: ChatContract.self) else {
                throw StoreError("chat job \(id) succeeded without a result")
            }
            let usage =
                stored.usage
                ?? .init(remainingChats: limit.map { max(0, $0 - used) }, totalUsedToday: used, subscriptionTier: user.tier.rawValue)
            return try Envelope.success(
                Answer(
                    response: stored.response, messageType: stored.messageType, followUpQuestions: stored.followUpQuestions, usage: usage))
        }
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
