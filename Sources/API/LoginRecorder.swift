import Accounts
import Foundation
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

    func record(_ event: SignInEvent, kind: String, ip: String?) async {
        let eventID = UUID.randomV4()
        do {
            try await LoginEvents(database).record(eventID: eventID, userID: event.userID, kind: kind, provider: event.provider, ip: ip)
        } catch {
            logger.error("login event not recorded", metadata: ["user": "\(event.userID)", "error": "\(error)"])
        }
        guard webhookConfigured else { return }
        let payload: JSONValue = [
            "event": .string(kind), "eventId": .string(eventID.lowercasedString), "provider": .string(event.provider),
            "provider_uid": .string(event.subject), "email": event.email.map(JSONValue.string) ?? .null,
            "display_name": event.displayName.map(JSONValue.string) ?? .null,
            "client_timestamp": .string(Timestamp.format(Date())),
        ]
        do {
            _ = try await queue.enqueue("login-webhook", payload: payload, options: EnqueueOptions(owner: event.userID))
        } catch {
            // The sign-in itself succeeded; a lost notification is logged, not turned into a failed sign-in.
            logger.error("login-webhook not enqueued", metadata: ["user": "\(event.userID)", "error": "\(error)"])
        }
    }
}
