import Foundation

/// Where and how to connect. Built from
/// `postgres://user[:password]@host[:port]/database[?sslmode=…&application_name=…&pooler=transaction]`.
///
/// `description` redacts the password, so a configuration can be logged as it is.
package struct PostgresConfiguration: Sendable, CustomStringConvertible {
    package var host: String
    package var port: Int
    package var username: String?
    package var password: String?
    /// The database; libpq's default (the user name) when nil.
    package var database: String?
    /// libpq's `sslmode` (`disable`, `prefer`, `require`, `verify-full`, …); libpq's default (`prefer`) when nil.
    package var sslMode: String?
    /// Connections in the pool; each is owned by its own thread.
    package var poolSize: Int = 4
    /// How long establishing a connection (TCP, TLS, authentication) may take.
    package var connectTimeout: Duration = .seconds(5)
    /// The server cancels any statement running longer (SQLSTATE 57014, thrown as `.timeout`). Nil: the server's default.
    package var statementTimeout: Duration? = .seconds(30)
    /// The `search_path` every connection uses, e.g. `"tenant_a"` or `"tenant_a, public"`. The schema is not created here.
    package var searchPath: String?
    /// Shown in `pg_stat_activity`, so an operator can tell this service's connections apart.
    package var applicationName: String = "carbscan"
    /// A pooler between this client and PostgreSQL that lends a server connection per transaction (PgBouncer's
    /// `pool_mode = transaction`, Supavisor, RDS Proxy): nil when the client talks to PostgreSQL itself.
    package var pooler: PostgresPooler?
    /// Prepared statements keep their generic plan (`plan_cache_mode = force_generic_plan`), for a client whose
    /// statements are all keyed by ids (the API's). Left to choose, PostgreSQL re-plans a statement whenever a plan for
    /// the given values looks cheaper, which it does for any user its statistics do not name (every user of a large
    /// table, or one newer than the last ANALYZE): `GET /meals`'s page statement then cost Postgres 291–319 µs of CPU
    /// per request instead of 113–125 (2026-11-28). Off by default: a batch that walks a range needs the plan for its
    /// values (the scan reset of 1,000,000 users took 79 s with generic plans against 19.6 s). No effect through a
    /// transaction pooler, where every statement is unnamed and planned for its values anyway.
    package var genericPlans = false
    /// Reconnect backoff: doubles from `reconnectBase` up to `reconnectMax`; within it, calls fail fast.
    package var reconnectBase: Duration = .milliseconds(100)
    package var reconnectMax: Duration = .seconds(1)

    package init(host: String = "127.0.0.1", port: Int = 5432, username: String? = nil, password: String? = nil, database: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
    }

    /// Parses `postgres://` or `postgresql://user[:password]@host[:port]/database[?sslmode=…&application_name=…]`.
    package init(url: String) throws(PostgresError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw PostgresError(.invalidURL, "expected postgres://user[:password]@host[:port]/database, got '\(Self.redacted(url))'")
        }
        self.init()
        if var host = components.host, !host.isEmpty {
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            self.host = host.removingPercentEncoding ?? host
        }
        if let port = components.port {
            guard (1...65535).contains(port) else { throw PostgresError(.invalidURL, "port \(port) out of range") }
            self.port = port
        }
        if let user = components.user, !user.isEmpty { username = user.removingPercentEncoding ?? user }
        if let password = components.password { self.password = password.removingPercentEncoding ?? password }
        let path = String(components.path.drop { $0 == "/" })
        if !path.isEmpty {
            guard !path.contains("/") else { throw PostgresError(.invalidURL, "expected one database name in the path, got '\(path)'") }
            database = path.removingPercentEncoding ?? path
        }
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                let modes = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]
                guard modes.contains(value) else {
                    throw PostgresError(.invalidURL, "sslmode must be one of \(modes.joined(separator: ", ")), got '\(value)'")
                }
                sslMode = value
            case "application_name":
                applicationName = value
            case "pooler":
                pooler = try PostgresPooler(setting: value)
            default:
                throw PostgresError(
                    .invalidURL, "unsupported URL parameter '\(item.name)' (supported: sslmode, application_name, pooler)")
            }
        }
    }

    /// The URL with any password replaced by `***`, fit for logs.
    package static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url) else {
            // Unparseable: still hide anything between "://user:" and "@".
            return url.replacing(/:\/\/([^:\/@]*):[^@]*@/) { "://\($0.output.1):***@" }
        }
        guard components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "postgres://***"
    }

    package var description: String {
        var text = "postgres://"
        if let username { text += username }
        if password != nil { text += ":***" }
        if username != nil || password != nil { text += "@" }
        text += host.contains(":") ? "[\(host)]" : host
        text += ":\(port)/\(database ?? "")"
        var parameters: [String] = []
        if let sslMode { parameters.append("sslmode=\(sslMode)") }
        parameters.append("application_name=\(applicationName)")
        if let pooler { parameters.append("pooler=\(pooler.rawValue)") }
        return text + "?" + parameters.joined(separator: "&")
    }

    /// Where the server is, for log lines and error messages: never includes the password.
    var displayAddress: String { "\(host):\(port)/\(database ?? "")" }
}
