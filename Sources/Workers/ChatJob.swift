import Foundation
import JSON
import JobContracts
import Postgres
import Queue
import Store

/// `chat` (jobs/chat.yml): the AI nutrition assistant's answer, with its `messageType` and follow-up questions
/// (seed 001), stored in the user's chat history once per job id.
package struct ChatJob: JobKind {
    package typealias Contract = ChatContract

    struct Answer: Decodable {
        var response: String
        var messageType: String
        var followUpQuestions: [String]
    }

    static let messageTypes = ["carb_lookup", "meal_advice", "nutrition_question", "general"]

    static let schema: JSONValue = [
        "type": "object", "additionalProperties": false, "required": ["response", "messageType", "followUpQuestions"],
        "properties": [
            "response": ["type": "string", "description": "The answer, briefly, with grams where they help."],
            "messageType": ["type": "string", "enum": .array(messageTypes.map(JSONValue.string))],
            "followUpQuestions": ["type": "array", "items": ["type": "string"], "maxItems": 3],
        ],
    ]

    static let instructions = """
        You are CarbScan's nutrition assistant for people who count carbohydrates. Answer briefly and concretely, \
        with grams where you can. Answer with the JSON object asked for: response, messageType (carb_lookup, \
        meal_advice, nutrition_question or general) and up to three followUpQuestions the user might ask next.
        """

    let services: WorkerServices

    package init(services: WorkerServices) {
        self.services = services
    }

    /// The chat reserved when the message was accepted is charged with the stored answer, and refunded (once) when
    /// the job dies: a permanent failure, or a failure on its last attempt. An outage refunds nothing: the job waits.
    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        try await refundingIfItDies(
            context, refund: { _ = try await ChatReservations(services.database).refund(messageID: parameters.messageId) },
            { try await answer(parameters, context: context) })
    }

    private func answer(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result {
        let answer = try await AIClient(services: services).complete(
            Answer.self, kind: Self.name,
            messages: [.init(role: "system", text: Self.instructions), .init(role: "user", text: parameters.message)],
            schemaName: "chat_answer", schema: Self.schema)
        let response = answer.response.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !response.isEmpty else { throw JobFailure.retryable("unusable AI answer: an empty response") }
        let type = Self.messageTypes.contains(answer.messageType) ? answer.messageType : "general"
        let followUps = answer.followUpQuestions.map { String($0.prefix(300)) }.filter { !$0.isEmpty }.prefix(3)
        let text = String(response.prefix(8000))
        let stored = try await ChatMessages(services.database).insertOnceCharging(
            userID: parameters.userId, jobID: context.id.rawValue, messageID: parameters.messageId, message: parameters.message,
            response: text, messageType: type, followUps: Array(followUps))
        return .init(
            messageId: stored.id, response: text, messageType: type, followUpQuestions: Array(followUps), usage: Self.usage(stored))
    }

    /// Seed 001's `usage` of a chat answer, as of this answer, so the async result (`jobs/{id}`) has the same shape
    /// as the sync 200. Nil for a job enqueued before chats were reserved.
    static func usage(_ stored: StoredChatAnswer) -> ChatContract.Usage? {
        guard let used = stored.usedOnItsDay, let tier = stored.tier else { return nil }
        return .init(remainingChats: tier.chatsPerDay.map { max(0, $0 - used) }, totalUsedToday: used, subscriptionTier: tier.rawValue)
    }
}
