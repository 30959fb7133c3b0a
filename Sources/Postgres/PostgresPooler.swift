/// How a connection pooler in front of PostgreSQL lends its server connections, when one is there.
///
/// Through a transaction pooler (PgBouncer's `pool_mode = transaction`) consecutive statements of one client may run
/// on different server connections, and a server connection serves many clients in turn. So, there, the client:
/// - runs every statement unnamed (`PQexecParams`): a statement prepared on one server connection does not exist on
///   the next (PgBouncer before 1.21 does not track protocol-level prepared statements);
/// - keeps no session state: no `options` in the startup packet (PgBouncer 1.18 refuses it), `TimeZone` and
///   `DateStyle` sent as the startup parameters PgBouncer tracks per client (libpq's `PGTZ`, `PGDATESTYLE`), and the
///   statement timeout set per transaction (`SET LOCAL`); single statements get the role's own
///   (`ALTER ROLE … SET statement_timeout`);
/// - refuses what needs a session: a `search_path` of its own, the migrator's advisory lock (migrations take a direct
///   connection, `DATABASE_MIGRATION_URL`).
package enum PostgresPooler: String, Sendable, CaseIterable {
    /// A server connection per transaction (PgBouncer `pool_mode = transaction`, Supavisor's transaction mode).
    case transaction

    /// Reads `transaction`, or `none`/empty (nil: the client talks to PostgreSQL, or to a session pooler, directly).
    package init?(setting value: String) throws(PostgresError) {
        switch value.lowercased() {
        case "", "none", "session": return nil
        case "transaction": self = .transaction
        default: throw PostgresError(.invalidURL, "pooler must be transaction or none, got '\(value)'")
        }
    }
}
