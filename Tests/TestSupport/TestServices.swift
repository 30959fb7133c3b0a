import Foundation

/// Where the tests find the local services `ops/services.sh` starts (overridden by the environment, as `.local/env.sh`
/// sets it) and the repository they run from.
public enum TestServices {
    public static let redisURL = ProcessInfo.processInfo.environment["REDIS_URL"] ?? "redis://127.0.0.1:56379/0"
    /// A Redis Cluster of three masters on loopback (`ops/cluster.sh start`, which `ops/test.sh` runs), by one node.
    public static let clusterURL = ProcessInfo.processInfo.environment["CARBSCAN_CLUSTER_URL"] ?? "redis://127.0.0.1:17001"
    /// Both: the tests of the queue's guarantees run on each.
    public static let redisURLs = [redisURL, clusterURL]
    public static let databaseURL =
        ProcessInfo.processInfo.environment["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:55432/carbscan"
    /// PgBouncer in transaction pooling in front of that Postgres (`ops/pgbouncer.sh start`, which `ops/test.sh` runs).
    public static let pgbouncerURL =
        ProcessInfo.processInfo.environment["CARBSCAN_PGBOUNCER_URL"]
        ?? "postgres://postgres@127.0.0.1:56432/carbscan?pooler=transaction"
    /// A streaming replica of the local Postgres replaying 2 s behind (`ops/replica.sh start`, which `ops/test.sh`
    /// runs); nil when none was started (an external `DATABASE_URL`): the read-replica tests are then skipped.
    public static let replicaURL = ProcessInfo.processInfo.environment["CARBSCAN_REPLICA_URL"]
    /// The repository's root (this file is `Tests/TestSupport/TestServices.swift`).
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
}
