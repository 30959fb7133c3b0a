import Foundation
import Queue
import Store

/// `chat` (jobs/chat.yml): the AI nutrition assistant's answer, with its `messageType` and follow-up questions
/// (seed 001), stored in the user's chat history once per job id.
public struct ChatJob: JobKind {
    public static let name = "chat"

    public struct Parameters: Decodable, Sendable {
        public var userId: String
        public var messageId: String
        public var message: String
    }

    struct Answer: Decodable {
        var response: String
        var messageType: String
        var followUpQuestions: [String]
    }

    static let messageTypes = ["carb_lookup", "meal_advice", "nutrition_question", "general"]

    static let schema: JSONValue = [
        "type": "object", "additionalProperties": false, "required": ["response", "messageType", "followUpQuestions"],
        "properties": [
            "response": ["type": "string"],
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

    public init(services: WorkerServices) {
        self.services = services
    }

    public func run(_ parameters: Parameters, context: JobContext) async throws -> JSONValue? {
        let answer = try await AIClient(services: services).complete(
            Answer.self, kind: Self.name,
            messages: [.init(role: "system", text: Self.instructions), .init(role: "user", text: parameters.message)],
            schemaName: "chat_answer", schema: Self.schema)
        let response = answer.response.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !response.isEmpty else { throw JobFailure.retryable("unusable AI answer: an empty response") }
        let type = Self.messageTypes.contains(answer.messageType) ? answer.messageType : "general"
        let followUps = answer.followUpQuestions.map { String($0.prefix(300)) }.filter { !$0.isEmpty }.prefix(3)
        let id = try await ChatMessages(services.database).insertOnce(
            userID: parameters.userId, jobID: context.id.rawValue, message: parameters.message, response: String(response.prefix(8000)),
            messageType: type, followUps: Array(followUps))
        return [
            "messageId": .int(Int(id)), "response": .string(String(response.prefix(8000))), "messageType": .string(type),
            "followUpQuestions": .array(followUps.map(JSONValue.string)),
        ]
    }
}
