import Foundation
import Postgres

/// The scan a photo holds: reserved when the photo is accepted (with its analysis job's id, in the same transaction),
/// then charged (its analysis succeeded) or refunded (it died or was cancelled) by the queue's settlement
/// (``QuotaReservation``) — each transition at most once, guarded by the reservation's status.
package struct ScanReservations: Sendable {
    let db: any PostgresQueryable

    package init(_ db: any PostgresQueryable) { self.db = db }

    package func insert(photoID: Int64, userID: String, jobID: String) async throws {
        try await db.execute(
            "INSERT INTO scan_reservations (photo_id, user_id, job_id) VALUES ($1, $2, $3::uuid)", [photoID, userID, jobID])
    }

    /// The scans are spent: their analyses succeeded.
    package func charge(photoIDs: [Int64]) async throws {
        guard !photoIDs.isEmpty else { return }
        try await db.execute(
            """
            UPDATE scan_reservations SET status = 'charged', settled_at = now()
            WHERE photo_id = ANY($1::bigint[]) AND status = 'reserved'
            """,
            ["{" + photoIDs.map(String.init).joined(separator: ",") + "}"])
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
