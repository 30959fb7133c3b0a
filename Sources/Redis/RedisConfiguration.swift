import Foundation

/// Where and how to connect. Built from `redis://[[user]:password@]host[:port][/db]`.
public struct RedisConfiguration: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?
    public var database: Int
    public var connectTimeout: Duration
    /// How long a reply may take before the connection is considered dead (blocking commands add their block time).
    public var readTimeout: Duration
    /// Connections in the shared pool; each is owned by its own thread.
    public var poolSize: Int
    /// Reconnect backoff: doubles from `reconnectBase` up to `reconnectMax`.
    public var reconnectBase: Duration
    public var reconnectMax: Duration

    public init(
        host: String = "127.0.0.1", port: Int = 6379, username: String? = nil, password: String? = nil, database: Int = 0,
        connectTimeout: Duration = .seconds(2), readTimeout: Duration = .seconds(5), poolSize: Int = 2,
        reconnectBase: Duration = .milliseconds(100), reconnectMax: Duration = .seconds(1)
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.poolSize = poolSize
        self.reconnectBase = reconnectBase
        self.reconnectMax = reconnectMax
    }

    /// Parses `redis://[[user]:password@]host[:port][/db]`.
    public init(url: String) throws(RedisError) {
        guard let components = URLComponents(string: url), components.scheme == "redis" else {
            throw RedisError(.invalidURL, "expected redis://[:password@]host:port/db, got '\(Self.redacted(url))'")
        }
        self.init()
        if let host = components.host, !host.isEmpty { self.host = host }
        if let port = components.port {
            guard (1...65535).contains(port) else { throw RedisError(.invalidURL, "port \(port) out of range") }
            self.port = port
        }
        if let user = components.user, !user.isEmpty { username = user.removingPercentEncoding ?? user }
        if let password = components.password { self.password = password.removingPercentEncoding ?? password }
        let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if !path.isEmpty {
            guard let db = Int(path), db >= 0 else { throw RedisError(.invalidURL, "database must be a number, got '\(path)'") }
            database = db
        }
    }

    /// The URL with any password replaced, fit for logs.
    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "redis://***"
    }

    public var displayAddress: String { "\(host):\(port)/\(database)" }
}
