import Accounts
import Crypto
import Foundation
import Hummingbird
import JobContracts
import Queue
import Redis
import Store

/// Magic-link sign-in (seed 001 `auth/magic-link/request` and `/verify`): `request` mails a single-use link valid
/// for 15 minutes to the account with that email, through an `email` job; `verify` signs in with the link's token
/// like any other sign-in. `request` answers the seed's body whether or not the email is registered.
struct MagicLinkRoutes {
    let accounts: AccountService
    let queue: JobQueue
    let recorder: LoginRecorder
    /// Nil without `SMTP_URL`: `request` answers CONFIGURATION_ERROR.
    let settings: MagicLinkSettings?

    func register(on api: RouteTable) {
        api.post("auth/magic-link/request", request)
        api.post("auth/magic-link/verify", verify)
    }

    struct Requested: Encodable {
        var sent = true
        var message = "If this email is registered, you will receive a sign-in link shortly"
    }

    func request(_ request: Request, _ context: APIContext) async throws -> Response {
        guard let settings else {
            throw APIError(
                .serviceUnavailable, "CONFIGURATION_ERROR", "Magic link sign-in is not configured on this server (no mail server)")
        }
        struct Body: Decodable { var email: String }
        let body = try await JSONBody.decode(Body.self, from: request, allowedKeys: ["email"])
        let email = try Field.text(body.email, "email", max: 320, required: true)!
        try await settings.throttle(redis: queue.redis, prefix: queue.options.prefix).admit(email: email, ip: context.remoteIP)
        let link: (token: String, user: User)?
        do {
            link = try await accounts.magicLinkToken(email: email)
        } catch AccountError.invalidInput(let field, let message) {
            throw APIError.validation(field, message)
        }
        if let link, let address = link.user.email {
            let url = settings.linkTemplate.replacingOccurrences(of: "{token}", with: link.token)
            let text = """
                Tap the link below on your iPhone to sign in to CarbScan. It works once, for the next 15 minutes.

                \(url)

                If you did not ask to sign in, ignore this mail: nothing happens without the link.
                """
            _ = try await queue.enqueue(EmailContract.self, .init(to: address, subject: "Your CarbScan sign-in link", text: text))
        }
        return try Envelope.success(Requested())
    }

    func verify(_ request: Request, _ context: APIContext) async throws -> Response {
        struct Body: Decodable {
            var token: String
            var deviceId: String?
        }
        let body = try await JSONBody.decode(Body.self, from: request, allowedKeys: ["token", "deviceId"])
        let token = try Field.text(body.token, "token", max: 256, required: true)!
        let deviceID = try Field.text(body.deviceId, "deviceId", max: 200)
        do {
            let (session, event) = try await accounts.signInWithMagicLink(token: token, deviceID: deviceID)
            await recorder.record(event, kind: .signin, ip: context.remoteIP)
            return try Envelope.success(AuthRoutes.AuthResult(session))
        } catch AccountError.invalidMagicLink {
            throw APIError(
                .unauthorized, "MAGIC_LINK_INVALID",
                "This sign-in link is not valid: it was used, it expired, or it was never sent. Ask for a new one.")
        }
    }
}

/// `MAGIC_LINK_URL` (the link's template, `{token}` replaced) and the request limits (`MAGIC_LINK_MAX_PER_EMAIL` per
/// 15 minutes, `MAGIC_LINK_MAX_PER_IP` per minute); there are none without `SMTP_URL` (no mail server).
package struct MagicLinkSettings: Sendable {
    package var linkTemplate: String
    package var maxPerEmail: Int
    package var maxPerIP: Int

    package init(linkTemplate: String = "carbscan://auth/magic-link?token={token}", maxPerEmail: Int = 3, maxPerIP: Int = 10) {
        self.linkTemplate = linkTemplate
        self.maxPerEmail = maxPerEmail
        self.maxPerIP = maxPerIP
    }

    func throttle(redis: RedisClient, prefix: String) -> RequestThrottle {
        RequestThrottle(
            redis: redis, prefix: "\(prefix):throttle:magic-link", perSubject: (maxPerEmail, .seconds(900)), perIP: (maxPerIP, .seconds(60))
        )
    }
}
