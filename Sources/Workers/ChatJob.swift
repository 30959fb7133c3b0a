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
    let ai: AIClient
    /// The answers of the chats that end together, stored in one statement and one commit.
    let answers: GroupCommit<NewChatAnswer, StoredChatAnswer>

    package init(services: WorkerServices) {
        self.services = services
        self.ai = AIClient(services: services)
        self.answers = ChatMessages.batchedWriter(services.database)
    }

    /// The async steps only: the request is built and the answer tidied in functions of their own, so this frame,
    /// kept while the model thinks, holds little (see ``AIClient/complete(_:_:)``). The chat reserved when the message
    /// was accepted is the job's reservation: the queue charges it when the job succeeds and gives it back when the
    /// job dies or is cancelled (``QuotaLedger``); an outage settles nothing: the job waits.
    ///
    /// When the client asked for it (`stream`: it reads event streams) or follows the job's events as the job starts,
    /// the model streams its answer and the text of `response` is published as `delta`s while it arrives: they concatenate to the model's `response` as written, which the stored answer is
    /// after ``tidy(_:)`` (trimmed, at most 8,000 characters; the result carries it). Otherwise the call is the
    /// one-shot one: a streamed answer cost 4× the worker CPU per chat (1,650–1,787 against 400 µs,
    /// ops/bench/slow-provider.sh, 2026-11-27) and nobody would read it.
    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        let answer =
            await Self.streams(parameters, context.events)
            ? try await streamedAnswer(parameters.message, context.events)
            : try await ai.complete(Answer.self, Self.request(parameters.message, ai))
        let reply = try Self.tidy(answer)
        let stored = try await answers.submit(
            NewChatAnswer(
                userID: parameters.userId, jobID: context.id.rawValue, messageID: parameters.messageId, message: parameters.message,
                response: reply.response, messageType: reply.messageType, followUps: reply.followUpQuestions))
        return Self.result(reply, stored)
    }

    /// Out of ``run(_:context:)``: written inline, the streamed request's temporaries made its frame, which every held
    /// chat keeps, 656 bytes instead of 512 (544 with this function; `ops/bench/async_frames.py`, release).
    @inline(never)
    private func streamedAnswer(_ message: String, _ events: JobEvents) async throws -> Answer {
        try await ai.complete(Answer.self, Self.streamableRequest(message, ai), streaming: "response", to: events)
    }

    /// Whether the answer is worth streaming: the client asked for it, or someone follows the job now.
    @inline(never)
    static func streams(_ parameters: Parameters, _ events: JobEvents) async -> Bool {
        if parameters.stream == true { return events.isRecording }
        return await events.hasFollowers()
    }

    @inline(never)
    static func request(_ message: String, _ ai: AIClient) throws -> AIClient.Request {
        try ai.request(kind: name, messages: messages(message), schemaName: "chat_answer", schema: schema)
    }

    @inline(never)
    static func streamableRequest(_ message: String, _ ai: AIClient) throws -> AIClient.StreamableRequest {
        try ai.streamableRequest(kind: name, messages: messages(message), schemaName: "chat_answer", schema: schema)
    }

    private static func messages(_ message: String) -> [AIClient.Message] {
        [.init(role: "system", text: instructions), .init(role: "user", text: message)]
    }

    /// The answer as stored: trimmed, at most 8,000 characters, a known `messageType` (else `general`), at most three
    /// follow-ups of at most 300 characters. An empty answer is unusable (retried).
    @inline(never)
    static func tidy(_ answer: Answer) throws -> Answer {
        let response = answer.response.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !response.isEmpty else { throw JobFailure.retryable("unusable AI answer: an empty response") }
        let type = messageTypes.contains(answer.messageType) ? answer.messageType : "general"
        let followUps = answer.followUpQuestions.map { String($0.prefix(300)) }.filter { !$0.isEmpty }.prefix(3)
        return Answer(response: String(response.prefix(8000)), messageType: type, followUpQuestions: Array(followUps))
    }

    @inline(never)
    static func result(_ reply: Answer, _ stored: StoredChatAnswer) -> Contract.Result {
        .init(
            messageId: stored.id, response: reply.response, messageType: reply.messageType,
            followUpQuestions: reply.followUpQuestions, usage: usage(stored))
    }

    /// Seed 001's `usage` of a chat answer, as of this answer, so the async result (`jobs/{id}`) has the same shape
    /// as the sync 200. Nil for a job enqueued before chats were reserved.
    static func usage(_ stored: StoredChatAnswer) -> ChatContract.Usage? {
        guard let used = stored.usedOnItsDay, let tier = stored.tier else { return nil }
        return .init(remainingChats: tier.chatsPerDay.map { max(0, $0 - used) }, totalUsedToday: used, subscriptionTier: tier.rawValue)
    }
}
