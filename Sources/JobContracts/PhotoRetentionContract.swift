import Queue

/// `photo-retention` (jobs/photo-retention.yml): deletes stored meal photos past their retention and expired
/// idempotency keys. Enqueued by its hourly schedule.
package enum PhotoRetentionContract: JobContract {
    package static let name = "photo-retention"

    /// Nothing: the retention comes from the worker's settings.
    package struct Parameters: Codable, Sendable, Equatable {
        package init() {}
    }

    package struct Result: Codable, Sendable, Equatable {
        package var photosDeleted: Int
        package var batches: Int
        /// Photos stored before this instant (RFC 3339) were deleted.
        package var cutoff: String

        package init(photosDeleted: Int, batches: Int, cutoff: String) {
            self.photosDeleted = photosDeleted
            self.batches = batches
            self.cutoff = cutoff
        }
    }
}
