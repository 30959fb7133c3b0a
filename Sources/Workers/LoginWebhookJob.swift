import Foundation
import JSON
import JobContracts
import OutboundHTTP
import Queue
import Synchronization

/// The `login-webhook` kind (jobs/login-webhook.yml): POSTs a sign-in or sign-out to the Supabase/PostgREST-style
/// login endpoint of seed 002 (`{LOGIN_WEBHOOK_URL}/logins` or `/logins/signout`).
///
/// The body is seed 002's, member for member, so a Supabase table made as the seed says takes it (an unknown member
/// is refused there: 400 `PGRST204`). Delivery is at least once; the event's stable id rides in the table's own
/// primary key (`id`, a UUID; `LOGIN_WEBHOOK_ID_FIELD` renames it, `none` leaves it out), so a re-delivered job
/// makes the endpoint answer 409 `23505` instead of inserting twice, and that 409 counts as delivered.
/// A sign-out carries only seed 002 §4's three members; an endpoint without `logins/signout` (404: PostgREST has no
/// such table, and the seed says the backend "may ignore this") is skipped, not retried.
package struct LoginWebhookJob: JobKind {
    package typealias Contract = LoginWebhookContract

    let services: WorkerServices
    /// Whether this process has already said that the endpoint has no sign-out path (said once, not per event).
    private let signOutMissingNoticed = Notice()

    package init(services: WorkerServices) {
        self.services = services
    }

    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        guard let base = services.settings.loginWebhookURL else {
            throw JobFailure.permanent("login webhook is not configured: LOGIN_WEBHOOK_URL is not set")
        }
        let path: String
        switch parameters.event {
        case .signin: path = "/logins"
        case .signout: path = "/logins/signout"
        }
        let request = Self.request(
            parameters, url: base + path, apiKey: services.settings.loginWebhookAPIKey, idField: services.settings.loginWebhookIDField)
        try await services.acquire(forKind: Self.name)
        let response: HTTPResponse
        do {
            response = try await services.http.send(request)
        } catch {
            let reason = "login endpoint unreachable: \(error.message)"
            if error.outcome == .permanent { throw JobFailure.permanent(reason) }
            throw JobFailure.retryable(reason)
        }
        return try classify(response, event: parameters.event)
    }

    /// The POST of seed 002: its JSON body (plus the event id in `idField` for a sign-in), `Prefer: return=minimal`
    /// (PostgREST then answers 201 with no body), and the key both as `apikey` and as a bearer token, as Supabase's
    /// gateway wants them.
    static func request(_ parameters: Parameters, url: String, apiKey: String?, idField: String?) -> OutboundHTTP.HTTPRequest {
        var body: [String: JSONValue] = [
            "provider": .string(parameters.provider), "provider_uid": .string(parameters.providerUID),
            "client_timestamp": .string(parameters.clientTimestamp),
        ]
        if parameters.event == .signin {
            body["email"] = parameters.email.map(JSONValue.string) ?? .null
            body["display_name"] = parameters.displayName.map(JSONValue.string) ?? .null
            if let idField { body[idField] = .string(parameters.eventId) }
        }
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"), ("Accept", "application/json"), ("Prefer", "return=minimal"),
        ]
        if let apiKey {
            headers.append(("apikey", apiKey))
            headers.append(("Authorization", "Bearer \(apiKey)"))
        }
        return OutboundHTTP.HTTPRequest(
            method: .post, url: url, headers: headers, body: Array(JSONValue.object(body).jsonString.utf8), provider: "login-webhook")
    }

    /// 2xx → delivered; 409 `23505` → delivered before; a sign-out answered 404 → skipped (the endpoint has no
    /// sign-out path); 408/429/5xx → retry (after `Retry-After` when given); any other 4xx → dead at once with
    /// PostgREST's code and message (a retry would be refused the same way).
    func classify(_ response: HTTPResponse, event: LoginWebhookContract.Event) throws -> Contract.Result {
        if (200..<300).contains(response.status) {
            return .init(delivered: true, status: response.status)
        }
        let problem = PostgRESTProblem(response.body)
        if response.status == 409, problem.code == "23505" {
            return .init(delivered: true, duplicate: true)
        }
        if response.status == 404, event == .signout {
            if signOutMissingNoticed.first() {
                services.logger.notice(
                    "the login endpoint has no logins/signout (404); sign-outs are skipped",
                    metadata: ["answer": "\(redacted(problem.summary))"])
            }
            return .init(delivered: false, skipped: "the endpoint has no logins/signout (404)")
        }
        let reason = redacted("login endpoint answered \(response.status)\(problem.summary)")
        switch response.outcome {
        case .retryable: throw JobFailure.retryable(reason, after: response.retryAfter())
        case .success, .permanent: throw JobFailure.permanent(reason)
        }
    }

    /// The reason is kept with the job and shown to operators: an endpoint that echoes the key must not leak it.
    private func redacted(_ text: String) -> String {
        guard let key = services.settings.loginWebhookAPIKey, !key.isEmpty else { return text }
        return text.replacingOccurrences(of: key, with: "[redacted]")
    }
}

/// PostgREST's error body: `{"code": "PGRST301", "message": "…", "details": …, "hint": …}`.
struct PostgRESTProblem {
    var code: String?
    var message: String?

    init(_ body: [UInt8]) {
        let value = try? JSONValue(parsing: String(decoding: body.prefix(16_384), as: UTF8.self))
        if case .string(let code)? = value?["code"] { self.code = code }
        if case .string(let message)? = value?["message"] { self.message = String(message.prefix(300)) }
    }

    /// `: PGRST301 JWT invalid`, or nothing when the body said nothing useful.
    var summary: String {
        let parts = [code, message].compactMap { $0 }
        return parts.isEmpty ? "" : ": " + parts.joined(separator: " ")
    }
}

/// True the first time it is asked, false after: for things a process says once.
final class Notice: Sendable {
    private let said = Atomic<Bool>(false)

    func first() -> Bool { !said.exchange(true, ordering: .relaxed) }
}
