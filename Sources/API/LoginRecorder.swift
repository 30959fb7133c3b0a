import Accounts
import Foundation
import JobContracts
import Logging
import Postgres
import Queue
import Store

/// Records every sign-in and sign-out: a `login_events` row, and a `login-webhook` job when a login endpoint is
/// configured (`LOGIN_WEBHOOK_URL`; seed 002: no URL, nothing is sent). The event id travels with the job so
/// the endpoint can ignore a re-delivery.
struct LoginRecorder: Sendable {
    let database: PostgresClient
    let queue: JobQueue
    let webhookConfigured: Bool
    let logger: Logger

    func record(_ event: SignInEvent, kind: LoginWebhookContract.Event, ip: String?) async {
        // A sign-in wrote the sign-in (and maybe the account): the user's next reads must see them.
        RequestWriter.note(event.userID)
        let eventID = UUID.randomV4()
        do {
            try await LoginEvents(database).record(
                eventID: eventID, userID: event.userID, kind: kind.rawValue, provider: event.provider, ip: ip)
        } catch {
            logger.error("login event not recorded", metadata: ["user": "\(event.userID)", "error": "\(error)"])
        }
        guard webhookConfigured else { return }
        let parameters = LoginWebhookContract.Parameters(
            event: kind, eventId: eventID.lowercasedString, provider: event.provider, providerUID: event.subject, email: event.email,
            displayName: event.displayName, clientTimestamp: Timestamp.format(Date()))
        do {
            _ = try await queue.enqueue(LoginWebhookContract.self, parameters, options: EnqueueOptions(owner: event.userID))
        } catch {
            // The sign-in itself succeeded; a lost notification is logged, not turned into a failed sign-in.
            logger.error("login-webhook not enqueued", metadata: ["user": "\(event.userID)", "error": "\(error)"])
        }
    }
}
