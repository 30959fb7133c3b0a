import Queue

/// `photo-retention` (jobs/photo-retention.yml): deletes stored meal photos past their retention, after refunding
/// the scans and chats of jobs that died without running their handler. Enqueued by its hourly schedule.
public enum PhotoRetentionContract: JobContract {
    public static let name = "photo-retention"

    /// Nothing: the retention comes from the worker's settings.
    public struct Parameters: Codable, Sendable, Equatable {
        public init() {}
    }

    public struct Result: Codable, Sendable, Equatable {
        public var photosDeleted: Int
        public var batches: Int
        public var scansRefunded: Int
        public var chatsRefunded: Int
        /// Photos stored before this instant (RFC 3339) were deleted.
        public var cutoff: String

        public init(photosDeleted: Int, batches: Int, scansRefunded: Int, chatsRefunded: Int, cutoff: String) {
            self.photosDeleted = photosDeleted
            self.batches = batches
            self.scansRefunded = scansRefunded
            self.chatsRefunded = chatsRefunded
            self.cutoff = cutoff
        }
    }
}
