import Foundation

/// One plain-text mail (RFC 5322 headers, UTF-8 body), as `SMTPMailer` sends it.
package struct MailMessage: Sendable, Equatable {
    package var from: String
    package var to: String
    package var subject: String
    package var text: String

    package init(from: String, to: String, subject: String, text: String) {
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
    }
}

/// Why a mail was not sent. `kind` tells the queue whether another try can help.
package struct MailError: Error, CustomStringConvertible, Sendable {
    package enum Kind: Sendable { case retryable, permanent }
    package let kind: Kind
    package let message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }
}
