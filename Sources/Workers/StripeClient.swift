import Foundation
import JSON
import OutboundHTTP
import Queue

/// A subscription as Stripe's `GET /v1/subscriptions/{id}` returns it, reduced to what the sync needs.
struct StripeSubscription: Sendable, Equatable {
    var id: String
    var customer: String?
    var status: String
    /// When the paid period ends (the renewal date). Read from the subscription, or from its first item since
    /// API version 2025-03-31, which moved the period to the items.
    var currentPeriodEnd: Date?
    var cancelAtPeriodEnd: Bool
    var priceIDs: [String]
    /// `metadata.userId`, set by CarbScan's checkout so a new subscription finds its user.
    var metadataUserID: String?

    init(
        id: String, customer: String?, status: String, currentPeriodEnd: Date?, cancelAtPeriodEnd: Bool, priceIDs: [String],
        metadataUserID: String?
    ) {
        self.id = id
        self.customer = customer
        self.status = status
        self.currentPeriodEnd = currentPeriodEnd
        self.cancelAtPeriodEnd = cancelAtPeriodEnd
        self.priceIDs = priceIDs
        self.metadataUserID = metadataUserID
    }

    /// Parses the subscription object; nil when it lacks an id or a status (not a subscription).
    init?(_ value: JSONValue) {
        guard case .string(let id)? = value["id"], case .string(let status)? = value["status"] else { return nil }
        var items: [JSONValue] = []
        if case .array(let list)? = value["items"]?["data"] { items = list }
        // `customer` is an id, or the customer object when the request expanded it.
        var customer: String?
        switch value["customer"] {
        case .string(let text)?: customer = text
        case let object? where object["id"] != nil: if case .string(let text)? = object["id"] { customer = text }
        default: customer = nil
        }
        let periodEnd =
            Self.unixDate(value["current_period_end"]) ?? items.lazy.compactMap { Self.unixDate($0["current_period_end"]) }.first
        var userID: String?
        if case .string(let text)? = value["metadata"]?["userId"], !text.isEmpty { userID = text }
        self.init(
            id: id, customer: customer, status: status, currentPeriodEnd: periodEnd,
            cancelAtPeriodEnd: value["cancel_at_period_end"] == .bool(true),
            priceIDs: items.compactMap { item in
                if case .string(let price)? = item["price"]?["id"] { return price }
                return nil
            },
            metadataUserID: userID)
    }

    private static func unixDate(_ value: JSONValue?) -> Date? {
        switch value {
        case .int(let seconds)?: Date(timeIntervalSince1970: TimeInterval(seconds))
        case .double(let seconds)?: Date(timeIntervalSince1970: seconds)
        default: nil
        }
    }
}

/// Reads subscriptions from Stripe's REST API (or anything speaking its protocol at `base`), classifying every
/// failure for the queue: Stripe's 404 `resource_missing` and 401 (a wrong key) can never pass on retry, so the job
/// dies at once with the reason; 429, 5xx and network failures are retried, after `Retry-After` when given.
struct StripeClient: Sendable {
    let http: HTTPClient
    let base: String
    let secretKey: String

    /// Stripe ids are `sub_` followed by letters and digits; anything else is refused before it reaches a URL.
    static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 255
            && id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x5F }
    }

    func subscription(_ id: String) async throws -> StripeSubscription {
        guard Self.isValidID(id) else { throw JobFailure.permanent("'\(id.prefix(80))' is not a subscription id") }
        let url = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/v1/subscriptions/\(id)"
        let request = OutboundHTTP.HTTPRequest(
            url: url, headers: [("Authorization", "Bearer \(secretKey)"), ("Accept", "application/json")], provider: "stripe")
        let response: HTTPResponse
        do {
            response = try await http.send(request)
        } catch {
            let reason = "subscription provider unreachable: \(error.message)"
            if error.outcome == .permanent { throw JobFailure.permanent(redacted(reason)) }
            throw JobFailure.retryable(redacted(reason))
        }
        if response.status == 200 {
            guard let value = try? JSONValue(parsing: String(decoding: response.body, as: UTF8.self)),
                let subscription = StripeSubscription(value)
            else { throw JobFailure.retryable("subscription provider answered 200 without a subscription object") }
            return subscription
        }
        let problem = StripeProblem(response.body)
        let reason: String
        switch response.status {
        case 404: reason = "subscription \(id) does not exist at the provider (404\(problem.summary))"
        case 401: reason = "the provider refused the API key, check STRIPE_SECRET_KEY (401\(problem.summary))"
        default: reason = "subscription provider answered \(response.status)\(problem.summary)"
        }
        switch response.outcome {
        case .retryable: throw JobFailure.retryable(redacted(reason), after: response.retryAfter())
        case .success, .permanent: throw JobFailure.permanent(redacted(reason))
        }
    }

    /// Reasons are kept with the job and shown to operators: a provider message that echoes the key must not leak it.
    private func redacted(_ text: String) -> String {
        secretKey.isEmpty ? text : text.replacingOccurrences(of: secretKey, with: "[redacted]")
    }
}

/// Stripe's error body: `{"error": {"type": "invalid_request_error", "code": "resource_missing", "message": "…"}}`.
struct StripeProblem {
    var type: String?
    var code: String?
    var message: String?

    init(_ body: [UInt8]) {
        let error = (try? JSONValue(parsing: String(decoding: body.prefix(16_384), as: UTF8.self)))?["error"]
        if case .string(let type)? = error?["type"] { self.type = type }
        if case .string(let code)? = error?["code"] { self.code = code }
        if case .string(let message)? = error?["message"] { self.message = String(message.prefix(300)) }
    }

    /// `: invalid_request_error resource_missing No such subscription`, or nothing when the body said nothing useful.
    var summary: String {
        let parts = [type, code, message].compactMap { $0 }
        return parts.isEmpty ? "" : ": " + parts.joined(separator: " ")
    }
}
