import JobContracts
import Mail
import Queue

/// The `email` kind (jobs/email.yml): sends one plain-text mail through SMTP (`SMTP_URL`, from `MAIL_FROM`). An
/// SMTP 5xx (mailbox unavailable, relay denied) is permanent; no connection, a timeout or a 4xx is retried.
/// The text may hold a sign-in link: it is never logged, and the record goes as soon as the mail is sent.
package struct EmailJob: JobKind {
    package typealias Contract = EmailContract

    let services: WorkerServices

    package init(services: WorkerServices) {
        self.services = services
    }

    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        guard let mailer = services.mailer else { throw JobFailure.permanent("mail is not configured: SMTP_URL is not set") }
        do {
            try await mailer.send(
                MailMessage(from: services.settings.mailFrom, to: parameters.to, subject: parameters.subject, text: parameters.text))
        } catch {
            switch error.kind {
            case .permanent: throw JobFailure.permanent(error.message)
            case .retryable: throw JobFailure.retryable(error.message)
            }
        }
        return .init(sent: true)
    }
}
