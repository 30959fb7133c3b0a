import Postgres

/// What a job of the user's holds of their quota while it runs, named as the job carries it
/// (`EnqueueOptions.reservation`): one scan (`scan:<photo id>`, ``ScanReservations``) or one chat of a day
/// (`chat:<message id>`, ``ChatReservations``). The queue settles it as the job ends: charged when it succeeded,
/// released (given back) when it died or was cancelled.
package enum QuotaReservation: Hashable, Sendable {
    case scan(photoID: Int64)
    case chat(messageID: String)

    package var text: String {
        switch self {
        case .scan(let photoID): "scan:\(photoID)"
        case .chat(let messageID): "chat:\(messageID)"
        }
    }

    package init?(_ text: String) {
        if text.hasPrefix("scan:"), let photoID = Int64(text.dropFirst(5)) {
            self = .scan(photoID: photoID)
        } else if text.hasPrefix("chat:"), text.count > 5 {
            self = .chat(messageID: String(text.dropFirst(5)))
        } else {
            return nil
        }
    }

    /// Charges `charged` and releases `released`, each at most once (guarded by the reservation's status: a second
    /// settlement of the same reservation, or a charge after a release, changes nothing). Charges go in one statement
    /// per table; each release is one statement (it gives the quota back in the same statement).
    package static func settle(charged: [QuotaReservation], released: [QuotaReservation], in db: any PostgresQueryable) async throws {
        var photos: [Int64] = []
        var messages: [String] = []
        for reservation in charged {
            switch reservation {
            case .scan(let photoID): photos.append(photoID)
            case .chat(let messageID): messages.append(messageID)
            }
        }
        try await ScanReservations(db).charge(photoIDs: photos)
        try await ChatReservations(db).charge(messageIDs: messages)
        for reservation in released {
            switch reservation {
            case .scan(let photoID): _ = try await ScanReservations(db).refund(photoID: photoID)
            case .chat(let messageID): _ = try await ChatReservations(db).refund(messageID: messageID)
            }
        }
    }
}
