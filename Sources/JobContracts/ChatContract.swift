import Queue

/// `chat` (jobs/chat.yml): the AI nutrition assistant's answer to one message, stored in the user's chat history.
public enum ChatContract: JobContract {
    public static let name = "chat"

    public struct Parameters: Codable, Sendable, Equatable {
        public var userId: String
        /// The reserved chat (a lowercase UUID); the stored answer is keyed by it.
        public var messageId: String
        public var message: String

        public init(userId: String, messageId: String, message: String) {
            self.userId = userId
            self.messageId = messageId
            self.message = message
        }
    }

    /// The stored answer, in the shape of `POST /chat`'s 200 so that `jobs/{id}` shows the same.
    public struct Result: Codable, Sendable, Equatable {
        /// The chat history row (`chat_messages.id`), not the parameters' `messageId`.
        public var messageId: Int64
        public var response: String
        public var messageType: String
        public var followUpQuestions: [String]
        /// As of the answer; nil for a job enqueued before chats were reserved.
        public var usage: Usage?

        public init(messageId: Int64, response: String, messageType: String, followUpQuestions: [String], usage: Usage?) {
            self.messageId = messageId
            self.response = response
            self.messageType = messageType
            self.followUpQuestions = followUpQuestions
            self.usage = usage
        }
    }

    /// Seed 001's `usage` of a chat answer. `remainingChats` is `null`, never left out, for an unlimited tier.
    public struct Usage: Codable, Sendable, Equatable {
        public var remainingChats: Int?
        public var totalUsedToday: Int
        public var subscriptionTier: String

        public init(remainingChats: Int?, totalUsedToday: Int, subscriptionTier: String) {
            self.remainingChats = remainingChats
            self.totalUsedToday = totalUsedToday
            self.subscriptionTier = subscriptionTier
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(remainingChats, forKey: .remainingChats)
            try container.encode(totalUsedToday, forKey: .totalUsedToday)
            try container.encode(subscriptionTier, forKey: .subscriptionTier)
        }
    }
}
