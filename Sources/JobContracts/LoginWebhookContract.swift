import Queue

/// `login-webhook` (jobs/login-webhook.yml): a sign-in or sign-out, reported to the login endpoint of seed 002.
package enum LoginWebhookContract: JobContract {
    package static let name = "login-webhook"

    package enum Event: String, Codable, Sendable {
        case signin, signout
    }

    /// Seed 002's members under seed 002's names. `email` and `display_name` are sent as `null` when unknown, as
    /// the seed's body has them.
    package struct Parameters: Codable, Sendable, Equatable {
        package var event: Event
        /// Unique per event (a lowercase UUID): the endpoint refuses a second row with it, so a re-delivery is harmless.
        package var eventId: String
        package var provider: String
        package var providerUID: String
        package var email: String?
        package var displayName: String?
        /// RFC 3339, as the event's reporter stamped it.
        package var clientTimestamp: String

        package init(
            event: Event, eventId: String, provider: String, providerUID: String, email: String?, displayName: String?,
            clientTimestamp: String
        ) {
            self.event = event
            self.eventId = eventId
            self.provider = provider
            self.providerUID = providerUID
            self.email = email
            self.displayName = displayName
            self.clientTimestamp = clientTimestamp
        }

        enum CodingKeys: String, CodingKey {
            case event, eventId, provider, email
            case providerUID = "provider_uid"
            case displayName = "display_name"
            case clientTimestamp = "client_timestamp"
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(event, forKey: .event)
            try container.encode(eventId, forKey: .eventId)
            try container.encode(provider, forKey: .provider)
            try container.encode(providerUID, forKey: .providerUID)
            try container.encode(email, forKey: .email)
            try container.encode(displayName, forKey: .displayName)
            try container.encode(clientTimestamp, forKey: .clientTimestamp)
        }
    }

    /// One of three outcomes: delivered (`status`: the endpoint's 2xx), delivered before (`duplicate`: the endpoint
    /// already had the event id), or skipped (`skipped`: why; a sign-out to an endpoint without a sign-out path).
    package struct Result: Codable, Sendable, Equatable {
        package var delivered: Bool
        package var status: Int?
        package var duplicate: Bool?
        package var skipped: String?

        package init(delivered: Bool, status: Int? = nil, duplicate: Bool? = nil, skipped: String? = nil) {
            self.delivered = delivered
            self.status = status
            self.duplicate = duplicate
            self.skipped = skipped
        }
    }
}
