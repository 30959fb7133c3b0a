import Queue

/// `chat` (jobs/chat.yml): the AI nutrition assistant's answer to one message, stored in the user's chat history.
package enum ChatContract: JobContract {
    package static let name = "chat"

    package struct Parameters: Codable, Sendable, Equatable {
        package var userId: String
        /// The reserved chat (a lowercase UUID); the stored answer is keyed by it.
        package var messageId: String
        package var message: String

        package init(userId: String, messageId: String, message: String) {
            self.userId = userId
            self.messageId = messageId
            self.message = message
        }
    }

    /// The stored answer, in the shape of `POST /chat`'s 200 so that `jobs/{id}` shows the same.
    package struct Result: Codable, Sendable, Equatable {
        /// The chat history row (`chat_messages.id`), not the parameters' `messageId`.
        package var messageId: Int64
        package var response: String
        package var messageType: String
        package var followUpQuestions: [String]
        /// As of the answer; nil for a job enqueued before chats were reserved.
        package var usage: Usage?

        package init(messageId: Int64, response: String, messageType: String, followUpQuestions: [String], usage: Usage?) {
            self.messageId = messageId
            self.response = response
            self.messageType = messageType
            self.followUpQuestions = followUpQuestions
            self.usage = usage
        }
    }

    /// Seed 001's `usage` of a chat answer. `remainingChats` is `null`, never left out, for an unlimited tier.
    package struct Usage: Codable, Sendable, Equatable {
        package var remainingChats: Int?
        package var totalUsedToday: Int
        package var subscriptionTier: String

        package init(remainingChats: Int?, totalUsedToday: Int, subscriptionTier: String) {
            self.remainingChats = remainingChats
            self.totalUsedToday = totalUsedToday
            self.subscriptionTier = subscriptionTier
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(remainingChats, forKey: .remainingChats)
            try container.encode(totalUsedToday, forKey: .totalUsedToday)
            try container.encode(subscriptionTier, forKey: .subscriptionTier)
        }
    }
}
