import Queue

/// `email` (jobs/email.yml): one plain-text mail, e.g. a magic sign-in link. The text may hold a secret: it is never
/// logged, and the job's record goes as soon as the mail is sent.
public enum EmailContract: JobContract {
    public static let name = "email"

    public struct Parameters: Codable, Sendable, Equatable {
        public var to: String
        public var subject: String
        public var text: String

        public init(to: String, subject: String, text: String) {
            self.to = to
            self.subject = subject
            self.text = text
        }
    }

    public struct Result: Codable, Sendable, Equatable {
        /// Always true: a mail that was not sent fails the job instead.
        public var sent: Bool

        public init(sent: Bool) {
            self.sent = sent
        }
    }
}
