import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JSON
import JobContracts
import Postgres
import Queue
import Store

/// `webhooks/stripe` (signed provider events) and `subscriptions/sync` (the app asks): `subscription-sync` jobs.
///
/// Neither route trusts the event's copy of the subscription: the job reads the current one from the provider, so
/// the webhook only has to say which subscription changed, and answers Stripe at once.
struct BillingRoutes {
    let database: PostgresClient
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator
    /// `STRIPE_WEBHOOK_SECRET`; nil: the webhook answers CONFIGURATION_ERROR.
    let webhookSecret: String?
    /// How long `subscriptions/sync` waits for its job (`SYNC_WAIT_SECONDS`), like `analyze` and `chat`.
    let settings: ResultSettings

    /// Stripe's subscription events are a few kilobytes; anything far larger is not one of them.
    static let maxEventBytes = 256 * 1024
    /// Stripe retries an undelivered event for up to three days; the event id stays unique a little longer.
    static let eventUniqueness: Duration = .seconds(4 * 86_400)
    static let subscriptionEvents: Set<String> = [
        "customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted",
    ]

    func register(on api: RouteTable) {
        api.post("webhooks/stripe", webhook)
        api.post("subscriptions/sync", sync)
    }

    struct Synced: Encodable {
        var userId: String
        var tier: String
        var status: String
        @Nullable var renewalDate: Date?
    }

    func webhook(_ request: Request, _ context: APIContext) async throws -> Response {
        guard let secret = webhookSecret else {
            throw APIError(.serviceUnavailable, "CONFIGURATION_ERROR", "Stripe webhooks are not configured on this server")
        }
        // The signature covers the exact bytes sent: read them raw, check them, and only then parse.
        let raw = Array(try await JSONBody.collect(request, limit: Self.maxEventBytes).readableBytesView)
        try StripeSignature(secret: secret).verify(header: request.headers[.stripeSignature], payload: raw, now: Date())
        guard let event = try? JSONValue(parsing: String(decoding: raw, as: UTF8.self)), case .string(let eventID)? = event["id"],
            case .string(let type)? = event["type"], (1...255).contains(eventID.unicodeScalars.count), Self.isShapedLikeAnEvent(event)
        else { throw APIError(.badRequest, "VALIDATION_ERROR", "the body is not a Stripe event") }
        guard Self.subscriptionEvents.contains(type) else {
            return try Envelope.success(WebhookReceived(received: true, ignored: true, jobId: nil))
        }
        guard let object = event["data"]?["object"], case .string(let subscriptionID)? = object["id"],
            (1...255).contains(subscriptionID.count)
        else { throw APIError.validation("data.object.id", "the event carries no subscription id") }
        var parameters = SubscriptionSyncContract.Parameters(subscriptionId: subscriptionID, source: .webhook)
        if case .int(let created)? = event["created"], created >= 0 { parameters.eventCreated = created }
        if case .string(let userID)? = object["metadata"]?["userId"], (1...255).contains(userID.count) { parameters.userId = userID }
        // One job per event: Stripe re-sends an event until it gets a 2xx, sometimes after one already arrived.
        let result = try await queue.enqueue(
            SubscriptionSyncContract.self, parameters,
            options: EnqueueOptions(
                uniqueKey: "subscription-sync:event:\(eventID)", uniqueTTL: Self.eventUniqueness, owner: parameters.userId))
        return try Envelope.success(WebhookReceived(received: true, ignored: false, jobId: result.jobID?.rawValue))
    }

    /// The members the document describes have its types where present: `created` a whole number ≥ 0, `data` and
    /// `data.object` objects, `data.object.id` a string.
    static func isShapedLikeAnEvent(_ event: JSONValue) -> Bool {
        func has(_ value: JSONValue?, _ test: (JSONValue) -> Bool) -> Bool { value.map(test) ?? true }
        func isObject(_ value: JSONValue) -> Bool { if case .object = value { true } else { false } }
        return has(event["created"]) { if case .int(let seconds) = $0 { seconds >= 0 } else { false } }
            && has(event["data"], isObject) && has(event["data"]?["object"], isObject)
            && has(event["data"]?["object"]?["id"]) { if case .string = $0 { true } else { false } }
    }

    func sync(_ request: Request, _ context: APIContext) async throws -> Response {
        let caller = try await authenticator.principal(request)
        let subscriptionID = try await Subscriptions(database).subscriptionID(userID: caller.userID)
        let parameters = SubscriptionSyncContract.Parameters(userId: caller.userID, subscriptionId: subscriptionID, source: .app)
        guard
            let id = try await queue.enqueue(SubscriptionSyncContract.self, parameters, options: EnqueueOptions(owner: caller.userID)).id
        else { throw StoreError("subscription-sync was not enqueued") }
        return try await JobAnswer.respond(request, job: id, waiter: waiter, settings: settings) { record in
            guard case .state(let stored)? = try? record.result(as: SubscriptionSyncContract.self) else {
                throw StoreError("subscription-sync job \(id) succeeded without a result")
            }
            return try Envelope.success(
                Synced(
                    userId: stored.userId, tier: stored.tier, status: stored.status,
                    renewalDate: stored.renewalDate.flatMap(Timestamp.parse)))
        }
    }
}

/// Checks `Stripe-Signature` as Stripe documents it: `t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=…]` over
/// `"<t>.<raw body>"` with the endpoint's signing secret. Any v1 may match (Stripe sends several while a secret is
/// rolled); a timestamp older than the tolerance is refused, so a captured request cannot be replayed later.
struct StripeSignature {
    let secret: String
    var tolerance: TimeInterval = 300

    func verify(header: String?, payload: [UInt8], now: Date) throws(APIError) {
        guard let header, !header.isEmpty else { throw Self.invalid("the Stripe-Signature header is missing") }
        var timestamp: Int?
        var signatures: [[UInt8]] = []
        for element in header.split(separator: ",") {
            let pair = element.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = pair[0].trimmingCharacters(in: .whitespaces)
            let value = pair[1].trimmingCharacters(in: .whitespaces)
            if name == "t" {
                timestamp = Int(value)
            } else if name == "v1", let bytes = Self.hexBytes(value) {
                signatures.append(bytes)
            }
        }
        guard let timestamp else { throw Self.invalid("the Stripe-Signature header has no timestamp") }
        guard !signatures.isEmpty else { throw Self.invalid("the Stripe-Signature header has no v1 signature") }
        let key = SymmetricKey(data: Array(secret.utf8))
        let signed = Array("\(timestamp).".utf8) + payload
        // swift-crypto compares authentication codes in constant time.
        guard signatures.contains(where: { HMAC<SHA256>.isValidAuthenticationCode($0, authenticating: signed, using: key) }) else {
            throw Self.invalid("no signature matches the payload")
        }
        guard TimeInterval(timestamp) >= now.timeIntervalSince1970 - tolerance else {
            throw Self.invalid("the signature's timestamp is outside the tolerance of \(Int(tolerance)) seconds")
        }
    }

    private static func invalid(_ reason: String) -> APIError {
        APIError(.badRequest, "INVALID_SIGNATURE", "Webhook signature verification failed: \(reason)")
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension HTTPField.Name {
    static let stripeSignature = HTTPField.Name("Stripe-Signature")!
}
