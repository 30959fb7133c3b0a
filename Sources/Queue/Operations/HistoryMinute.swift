import Foundation

/// One kind's jobs in one minute, across every worker.
public struct KindMinute: Sendable, Codable, Equatable {
    public var succeeded: Int
    public var failed: Int
    /// The handlers' run time, summed, in milliseconds.
    public var milliseconds: Int

    public init(succeeded: Int = 0, failed: Int = 0, milliseconds: Int = 0) {
        self.succeeded = succeeded
        self.failed = failed
        self.milliseconds = milliseconds
    }
}

/// One minute of the history (Sidekiq 7's Metrics): per kind, what ended in that minute.
public struct HistoryMinute: Sendable, Codable, Equatable {
    /// The minute's start.
    public var minute: Date
    /// Kinds with at least one job that ended in the minute.
    public var kinds: [String: KindMinute]
}
