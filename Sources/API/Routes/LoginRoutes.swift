import Foundation
import Hummingbird
import JSON
import JobContracts
import Queue

/// `logins` and `logins/signout` (seed 002): the app reports a sign-in or sign-out with a provider it handled
/// itself (Apple, Google); the event goes to the login endpoint through a `login-webhook` job. Without
/// `LOGIN_WEBHOOK_URL` nothing is enqueued, as seed 002 says.
struct LoginRoutes {
    let queue: JobQueue
    let authenticator: Authenticator
    let webhookConfigured: Bool

    func register(on api: RouteTable) {
        api.post("logins") { request, context in try await report(request, context, event: .signin) }
        api.post("logins/signout") { request, context in try await report(request, context, event: .signout) }
    }

    /// Read by its own `init(members:)`: through Codable it was 1.6% of `POST /logins`'s CPU (perf, 2026-11-29).
    /// `LoginBodyDecodingTests` holds it to the refusals of its `Decodable` twin.
    struct LoginBody: JSONMembersDecodable {
        static let nullableMembers: Set = ["email", "display_name"]
        var provider: String
        var providerUID: String
        var email: String?
        var displayName: String?
        var clientTimestamp: Date

        /// In the order of the members, as a synthesized `init(from:)` reads them, so the first refusal is the same.
        init(members: JSONMembers) throws {
            provider = try members.string("provider")
            providerUID = try members.string("provider_uid")
            email = try members.optionalString("email")
            displayName = try members.optionalString("display_name")
            clientTimestamp = try members.date("client_timestamp")
        }
    }

    /// Written straight into the API's encoder (`streamingObject`), else by the keyed container (`LoginAcceptedEncodingTests`
    /// holds the two to one output): through the keyed container it was 1.6% of `POST /logins`'s CPU (perf, 2026-11-29).
    struct Accepted: Encodable {
        var enqueued: Bool
        var eventId: String
        var jobId: String?

        enum CodingKeys: String, CodingKey { case enqueued, eventId, jobId }

        /// `jobId` is `null` when nothing was enqueued.
        func encode(to encoder: any Encoder) throws {
            if let object = encoder.streamingObject() {
                object.write(CodingKeys.enqueued.rawValue, enqueued)
                object.write(CodingKeys.eventId.rawValue, eventId)
                object.write(CodingKeys.jobId.rawValue, jobId)
                return
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(enqueued, forKey: .enqueued)
            try container.encode(eventId, forKey: .eventId)
            try container.encode(jobId, forKey: .jobId)
        }
    }

    func report(_ request: Request, _ context: APIContext, event: LoginWebhookContract.Event) async throws -> Response {
        let caller = try await authenticator.principal(request)
        let body = try await JSONBody.decode(
            LoginBody.self, from: request, allowedKeys: ["provider", "provider_uid", "email", "display_name", "client_timestamp"])
        let provider = try Field.text(body.provider, "provider", max: 50, required: true)!
        guard ["apple", "google", "email"].contains(provider) else {
            throw APIError.validation("provider", "field 'provider' must be one of apple, google, email")
        }
        let subject = try Field.text(body.providerUID, "provider_uid", max: 255, required: true)!
        let email = try Field.text(body.email, "email", max: 320)
        let name = try Field.text(body.displayName, "display_name", max: 255)
        let eventID = UUID.randomV4().lowercasedString
        guard webhookConfigured else {
            return try Envelope.success(Accepted(enqueued: false, eventId: eventID, jobId: nil), status: .accepted)
        }
        let parameters = LoginWebhookContract.Parameters(
            event: event, eventId: eventID, provider: provider, providerUID: subject, email: email, displayName: name,
            clientTimestamp: Timestamp.format(body.clientTimestamp))
        let result = try await queue.enqueue(LoginWebhookContract.self, parameters, options: EnqueueOptions(owner: caller.userID))
        var headers = HTTPFields()
        if let id = result.id { headers[.location] = "\(RouteTable.basePath)/jobs/\(id.rawValue)" }
        return try Envelope.success(
            Accepted(enqueued: result.id != nil, eventId: eventID, jobId: result.id?.rawValue), status: .accepted, headers: headers)
    }
}
