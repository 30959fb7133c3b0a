/// How long finished job records are kept in Redis: long enough for clients and operators to look,
/// short enough that memory stays bounded.
public struct Retention: Sendable, Equatable {
    /// Kept after success (clients poll results).
    public var succeeded: Duration
    /// Kept after the last failed attempt (the on-call engineer reads the error).
    public var failed: Duration

    public init(succeeded: Duration, failed: Duration) {
        self.succeeded = succeeded
        self.failed = failed
    }

    /// Succeeded 24h, failed 30d.
    public static let `default` = Retention(succeeded: .seconds(86_400), failed: .seconds(30 * 86_400))
}
