import Foundation
import JobContracts
import Postgres
import Queue
import Store

/// The `photo-retention` kind (jobs/photo-retention.yml): deletes stored meal photos older than
/// `WorkerSettings.photoRetention`, oldest first, in short batches so no delete holds locks for long. Meals keep
/// their rows (`meals.photo_id` is `ON DELETE SET NULL`). Idempotent: a re-run finds nothing left to delete.
/// Last it deletes `Idempotency-Key`s older than their 24 hours and push claims older than a week.
package struct PhotoRetentionJob: JobKind {
    package typealias Contract = PhotoRetentionContract
    package static let holdsDatabaseConnection = true

    let services: WorkerServices
    let batchSize: Int

    package init(services: WorkerServices, batchSize: Int = 1000) {
        self.services = services
        self.batchSize = batchSize
    }

    package func run(_ parameters: Parameters, context: JobContext) async throws -> Contract.Result? {
        let cutoff = Date().addingTimeInterval(-Double(services.settings.photoRetention.components.seconds))
        var deleted = 0
        var batches = 0
        while !Task.isCancelled {
            // A photo whose scan is still reserved belongs to an analysis that may yet run (or be released): deleting
            // it would cascade away the reservation, and with it the release. It goes once the scan is settled.
            let count = try await services.database.execute(
                """
                DELETE FROM meal_photos WHERE id IN (
                    SELECT p.id FROM meal_photos p
                    WHERE p.created_at < $1::timestamptz
                      AND NOT EXISTS (SELECT 1 FROM scan_reservations r WHERE r.photo_id = p.id AND r.status = 'reserved')
                    ORDER BY p.created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
                """,
                [cutoff, batchSize])
            guard count > 0 else { break }
            deleted += count
            batches += 1
        }
        try Task.checkCancellation()
        // Idempotency keys past their 24 hours: a retry that late is a new request.
        let keys = try await IdempotencyKeys(services.database).deleteExpired()
        let claims = try await PushDeliveries(services.database).deleteClaimed(before: Date().addingTimeInterval(-7 * 86_400))
        context.logger.info(
            "old meal photos deleted",
            metadata: [
                "deleted": "\(deleted)", "cutoff": "\(cutoff)", "idempotencyKeysDeleted": "\(keys)", "pushClaimsDeleted": "\(claims)",
            ])
        return .init(
            photosDeleted: deleted, batches: batches, cutoff: ISO8601DateFormatter().string(from: cutoff))
    }
}
