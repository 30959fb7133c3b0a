import Foundation

/// One plain-text mail (RFC 5322 headers, UTF-8 body), as `SMTPMailer` sends it.
public struct MailMessage: Sendable, Equatable {
    public var from: String
    public var to: String
    public var subject: String
    public var text: String

    public init(from: String, to: String, subject: String, text: String) {
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
    }
}

/// Why a mail was not sent. `kind` tells the queue whether another try can help.
public struct MailError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable { case retryable, permanent }
    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
