import Queue

/// `email` (jobs/email.yml): one plain-text mail, e.g. a magic sign-in link. The text may hold a secret: it is never
/// logged, and the job's record goes as soon as the mail is sent.
package enum EmailContract: JobContract {
    package static let name = "email"

    package struct Parameters: Codable, Sendable, Equatable {
        package var to: String
        package var subject: String
        package var text: String

        package init(to: String, subject: String, text: String) {
            self.to = to
            self.subject = subject
            self.text = text
        }
    }

    package struct Result: Codable, Sendable, Equatable {
        /// Always true: a mail that was not sent fails the job instead.
        package var sent: Bool

        package init(sent: Bool) {
            self.sent = sent
        }
    }
}
