import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Postgres
import Queue
import Store

/// `Idempotency-Key` (IETF httpapi draft "The Idempotency-Key HTTP Header Field") on the POSTs that charge or store:
/// a retry with the same key, from the same user, with the same request within 24 hours answers what the first
/// answered and charges nothing more. The same key with another request is 422 `IDEMPOTENCY_KEY_REUSED`; a retry
/// while the first is still being answered, before it has a job to follow, is 409 `IDEMPOTENCY_KEY_IN_USE`.
struct IdempotentRequests: Sendable {
    let database: PostgresClient

    static let header = HTTPField.Name("Idempotency-Key")!
    /// Set on an answer replayed from a stored one (as Stripe does).
    static let replayedHeader = HTTPField.Name("Idempotent-Replayed")!
    /// A key still unanswered this long after it was taken belongs to a request whose process died before it charged
    /// anything (a request that got as far as its job has the job recorded): a retry may take it over.
    static let abandonedAfter: TimeInterval = 60

    /// How the route goes on with a request.
    enum Start {
        /// No key was sent: answer as usual.
        case unkeyed
        /// This request took the key: answer, recording the job (`attach`) or the answer (`complete`), or `release` it.
        case owner(Key)
        /// A retry of a request that started this job: answer with the job as it stands.
        case job(JobID)
        /// A retry of a request that was answered without a job: this is that answer.
        case replay(Response)
    }

    struct Key: Sendable {
        let userID: String?
        let value: String
    }

    /// Reads the key (none: `.unkeyed`) and takes it, or finds what its first request did. `fingerprint` identifies
    /// the request's content (the same content, sent again, has the same fingerprint).
    func start(_ request: Request, userID: String?, route: String, fingerprint: [UInt8]) async throws -> Start {
        guard let value = try Self.key(in: request) else { return .unkeyed }
        let key = Key(userID: userID, value: value)
        let digest = Array(SHA256.hash(data: Array(route.utf8) + [0] + fingerprint))
        let keys = IdempotencyKeys(database)
        if try await keys.claim(userID: userID, key: value, route: route, fingerprint: digest) { return .owner(key) }
        guard let held = try await keys.find(userID: userID, key: value) else {
            // Released by its failed first request between our claim and our read: take it now.
            guard try await keys.claim(userID: userID, key: value, route: route, fingerprint: digest) else { throw Self.inUse() }
            return .owner(key)
        }
        guard held.route == route, held.fingerprint == digest else {
            throw APIError(
                .unprocessableContent, "IDEMPOTENCY_KEY_REUSED",
                "This Idempotency-Key was already used with a different request; use a new key for a new request",
                details: ["field": "Idempotency-Key"])
        }
        if let text = held.jobID, let job = JobID(rawValue: text) { return .job(job) }
        if let status = held.status {
            var headers = HTTPFields()
            headers[Self.replayedHeader] = "true"
            return .replay(Envelope.response(status: .init(code: status), body: held.body ?? [], headers: headers))
        }
        if try await keys.takeOver(userID: userID, key: value, staleAfter: Self.abandonedAfter) {
            return .owner(key)
        }
        throw Self.inUse()
    }

    /// A request's fields as one fingerprint (nil and "" alike: the routes store them alike).
    static func fingerprint(_ fields: [String?]) -> [UInt8] {
        fields.flatMap { Array(($0 ?? "").utf8) + [0] }
    }

    /// Notes the job the key's request started; in `tx`, the transaction that wrote the job to the outbox, so a key
    /// never names a job that was not accepted, nor an accepted job goes without its key.
    func attach(_ key: Key, job: JobID, in tx: any PostgresQueryable) async throws {
        try await IdempotencyKeys(tx).attach(userID: key.userID, key: key.value, jobID: job.rawValue)
    }

    /// Stores the answer to replay; call it only for an answer that charged or stored what it says (a 2xx).
    func complete(_ key: Key, status: HTTPResponse.Status, body: [UInt8]) async throws {
        try await IdempotencyKeys(database).complete(userID: key.userID, key: key.value, status: Int(status.code), body: body)
    }

    /// The request failed before it charged or stored anything: a retry with the key runs afresh.
    func release(_ key: Key) async {
        try? await IdempotencyKeys(database).release(userID: key.userID, key: key.value)
    }

    /// The header's key: an RFC 8941 string (`"…"`, as the draft writes it) or the bare token clients send; 1–255
    /// visible ASCII characters.
    static func key(in request: Request) throws -> String? {
        let values = request.headers[values: header]
        guard let raw = values.first else { return nil }
        var text = raw.trimmingCharacters(in: .whitespaces)
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
        guard values.count == 1, (1...255).contains(text.utf8.count), text.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            throw APIError.validation("Idempotency-Key", "Idempotency-Key must be one value of 1–255 visible ASCII characters")
        }
        return text
    }

    static func inUse() -> APIError {
        var error = APIError(
            .conflict, "IDEMPOTENCY_KEY_IN_USE", "A request with this Idempotency-Key is still being answered; retry shortly",
            details: ["field": "Idempotency-Key"])
        error.headers[.retryAfter] = "1"
        return error
    }
}
