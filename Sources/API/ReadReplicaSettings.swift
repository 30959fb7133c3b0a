import Postgres

/// `DATABASE_READ_URL` and its companions: the read replicas `carbscan serve` sends its read-only queries to.
package struct ReadReplicaSettings: Sendable {
    /// `DATABASE_READ_URL`: one or more replicas of `DATABASE_URL`'s primary, comma-separated.
    package var replicas: [PostgresConfiguration]
    /// `DATABASE_READ_MAX_LAG_SECONDS` (default 10) and `DATABASE_READ_POOL_SIZE` (connections per replica, default 4).
    package var options: PostgresReadReplicas.Options

    package init(replicas: [PostgresConfiguration], options: PostgresReadReplicas.Options = .init()) {
        self.replicas = replicas
        self.options = options
    }
}
