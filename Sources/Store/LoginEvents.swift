import Foundation
import Postgres

package struct LoginEvents: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    package func record(eventID: UUID, userID: String, kind: String, provider: String, ip: String?) async throws {
        try await db.execute(
            "INSERT INTO login_events (event_id, user_id, kind, provider, ip) VALUES ($1, $2, $3, $4, $5)",
            [eventID, userID, kind, provider, ip]
        )
    }
}
