import Foundation
import Postgres

/// The scan a photo holds: reserved when the photo is accepted, then charged (its analysis succeeded) or refunded
/// (it died) — each transition at most once, guarded by the reservation's status.
package struct ScanReservations: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    package func insert(photoID: Int64, userID: String) async throws {
        try await db.execute("INSERT INTO scan_reservations (photo_id, user_id) VALUES ($1, $2)", [photoID, userID])
    }

    /// Notes the analysis job of a reserved photo.
    package func attach(photoID: Int64, jobID: String) async throws {
        try await db.execute("UPDATE scan_reservations SET job_id = $2::uuid WHERE photo_id = $1", [photoID, jobID])
    }

    /// Reservations still open after `age`: (photo, job) — their jobs should long have ended.
    package func open(olderThan cutoff: Date, limit: Int) async throws -> [(photoID: Int64, jobID: String?)] {
        try await db.query(
            """
            SELECT photo_id, job_id::text AS job_id FROM scan_reservations
            WHERE status = 'reserved' AND created_at < $1::timestamptz ORDER BY created_at LIMIT $2
            """,
            [cutoff, limit]
        ).map { (try $0.decode("photo_id"), try $0.decode("job_id")) }
    }

    /// Gives the scan back, once: the user's remaining scans go up by one (never past the tier's limit). Returns
    /// whether this call refunded it.
    @discardableResult
    package func refund(photoID: Int64) async throws -> Bool {
        let rows = try await db.query(
            """
            WITH settled AS (
                UPDATE scan_reservations SET status = 'refunded', settled_at = now()
                WHERE photo_id = $1 AND status = 'reserved' RETURNING user_id
            )
            UPDATE users SET remaining_scans = LEAST(remaining_scans + 1, \(ScanQuota.limitSQL))
            FROM settled WHERE users.id = settled.user_id RETURNING users.id
            """,
            [photoID])
        return !rows.isEmpty
    }

    package func status(photoID: Int64) async throws -> String? {
        try await db.query("SELECT status FROM scan_reservations WHERE photo_id = $1", [photoID]).first?.decode("status")
    }
}
