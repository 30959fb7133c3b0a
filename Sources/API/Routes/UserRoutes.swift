import Accounts
import Foundation
import Hummingbird
import JSON
import Store

/// `users/me` (seed 003): read, create-or-update, and erase the account.
struct UserRoutes {
    let accounts: AccountService
    let authenticator: Authenticator

    func register(on api: RouteTable) {
        api.get("users/me") { request, _ in try Envelope.success(UserDTO(try await authenticator.caller(request).user)) }
        api.post("users/me", update)
        api.delete("users/me", delete)
    }

    struct ProfileBody: Decodable, NullableMembers {
        static let nullableMembers: Set = ["firstName", "lastName", "profileImageUrl", "timeZone", "emailRemindersEnabled"]
        var firstName: String?
        var lastName: String?
        var profileImageUrl: String?
        var timeZone: String?
        var emailRemindersEnabled: Bool?
    }

    /// Updates the caller's profile; for an extra issuer's token (e.g. Clerk) with no account yet, creates it
    /// (linked by verified email when one exists): 201.
    func update(_ request: Request, _ context: APIContext) async throws -> Response {
        let identity = try await authenticator.identify(request)
        let body = try await JSONBody.decode(
            ProfileBody.self, from: request,
            allowedKeys: ["firstName", "lastName", "profileImageUrl", "timeZone", "emailRemindersEnabled"])
        let changes = ProfileChanges(
            firstName: try Field.text(body.firstName, "firstName", max: 100),
            lastName: try Field.text(body.lastName, "lastName", max: 100),
            profileImageUrl: try Self.imageURL(body.profileImageUrl),
            timeZone: try Self.timeZone(body.timeZone),
            emailRemindersEnabled: body.emailRemindersEnabled)
        switch identity {
        case .account(let caller):
            guard let user = try await Users(accounts.database).update(id: caller.user.id, changes) else {
                throw APIError.notFound("User")
            }
            return try Envelope.success(UserDTO(user))
        case .unlinked(let identity):
            var user = try await accounts.user(
                for: identity, name: ProvidedName(firstName: changes.firstName, lastName: changes.lastName))
            // A new account: its first write is this request's.
            RequestWriter.note(user.id)
            if let updated = try await Users(accounts.database).update(id: user.id, changes) { user = updated }
            return try Envelope.success(UserDTO(user), status: .created)
        }
    }

    func delete(_ request: Request, _ context: APIContext) async throws -> Response {
        // The full check, not the session cache: erasing an account is worth the one query.
        let caller = try await authenticator.caller(request)
        do {
            try await accounts.deleteAccount(userID: caller.user.id)
        } catch AccountError.userNotFound {
            // Deleted by a concurrent request between the token check and now.
            throw APIError.notFound("User")
        }
        context.logger.info("account deleted", metadata: ["user": "\(caller.user.id)"])
        return try Envelope.success(["deleted": true])
    }

    static func timeZone(_ text: String?) throws -> String? {
        guard let text = try Field.text(text, "timeZone", max: 64) else { return nil }
        guard TimeZone(identifier: text) != nil else {
            throw APIError.validation("timeZone", "field 'timeZone' must be an IANA time zone such as Europe/Berlin")
        }
        return text
    }

    /// An https URL; blank is refused too (the document's `^https://`), null leaves the image as it is.
    static func imageURL(_ text: String?) throws -> String? {
        guard let text else { return nil }
        guard let text = try Field.text(text, "profileImageUrl", max: 2048), let url = URL(string: text), url.scheme == "https",
            url.host?.isEmpty == false
        else {
            throw APIError.validation("profileImageUrl", "field 'profileImageUrl' must be an https URL")
        }
        return text
    }
}
