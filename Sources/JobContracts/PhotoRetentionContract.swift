import Queue

/// `photo-retention` (jobs/photo-retention.yml): deletes stored meal photos past their retention, after refunding
/// the scans and chats of jobs that died without running their handler. Enqueued by its hourly schedule.
package enum PhotoRetentionContract: JobContract {
    package static let name = "photo-retention"

    /// Nothing: the retention comes from the worker's settings.
    package struct Parameters: Codable, Sendable, Equatable {
        package init() {}
    }

    package struct Result: Codable, Sendable, Equatable {
        package var photosDeleted: Int
        package var batches: Int
        package var scansRefunded: Int
        package var chatsRefunded: Int
        /// Photos stored before this instant (RFC 3339) were deleted.
        package var cutoff: String

        package init(photosDeleted: Int, batches: Int, scansRefunded: Int, chatsRefunded: Int, cutoff: String) {
            self.photosDeleted = photosDeleted
            self.batches = batches
            self.scansRefunded = scansRefunded
            self.chatsRefunded = chatsRefunded
            self.cutoff = cutoff
        }
    }
}
