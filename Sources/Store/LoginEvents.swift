import Foundation
import Postgres

public struct LoginEvents: Sendable {
    let db: any PostgresQueryable

    public init(_ db: any PostgresQueryable) { self.db = db }

    public func record(eventID: UUID, userID: String, kind: String, provider: String, ip: String?) async throws {
        try await db.execute(
            "INSERT INTO login_events (event_id, user_id, kind, provider, ip) VALUES ($1, $2, $3, $4, $5)",
            [eventID, userID, kind, provider, ip]
        )
    }
}
