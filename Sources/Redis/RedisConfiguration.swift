import Foundation

/// Where and how to connect. Built from `redis://[[user]:password@]host[:port][,host[:port]…][/db]`.
public struct RedisConfiguration: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// More addresses of the same cluster's nodes, asked in turn when `host:port` does not answer the first time the
    /// client learns the cluster's map (`redis://h1:6379,h2:6379`). Empty for a standalone server.
    public var otherSeeds: [RedisEndpoint] = []
    /// False: talk to this one server even when it is a cluster node (a tool or test looking at one node).
    public var followsCluster = true
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

    /// Parses `redis://[[user]:password@]host[:port][,host[:port]…][/db]`: several addresses name nodes of one cluster.
    public init(url: String) throws(RedisError) {
        let (url, others) = try Self.splitSeeds(url)
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
        otherSeeds = others
    }

    /// The URL with only its first address, and the other addresses of a comma-separated list.
    private static func splitSeeds(_ url: String) throws(RedisError) -> (String, [RedisEndpoint]) {
        guard let start = url.range(of: "://")?.upperBound, url[start...].contains(",") else { return (url, []) }
        let end = url[start...].firstIndex { $0 == "/" || $0 == "?" } ?? url.endIndex
        let authority = url[start..<end]
        let hostsStart = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
        let addresses = authority[hostsStart...].split(separator: ",", omittingEmptySubsequences: false)
        var others: [RedisEndpoint] = []
        for address in addresses.dropFirst() {
            let colon = address.lastIndex(of: ":")
            let host = colon.map { address[..<$0] } ?? address
            let port = colon.map { Int(address[address.index(after: $0)...]) } ?? 6379
            guard !host.isEmpty, let port, (1...65535).contains(port) else {
                throw RedisError(.invalidURL, "expected host:port in a list of addresses, got '\(address)'")
            }
            others.append(RedisEndpoint(host: String(host), port: port))
        }
        return (String(url[..<hostsStart]) + String(addresses[0]) + String(url[end...]), others)
    }

    /// The first address, then the others.
    public var seeds: [RedisEndpoint] { [RedisEndpoint(host: host, port: port)] + otherSeeds }

    /// These settings, for the server at `endpoint` (a node of the cluster).
    func at(_ endpoint: RedisEndpoint) -> RedisConfiguration {
        var copy = self
        copy.host = endpoint.host
        copy.port = endpoint.port
        copy.otherSeeds = []
        return copy
    }

    /// The URL with any password replaced, fit for logs.
    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "redis://***"
    }

    public var displayAddress: String {
        seeds.map(\.description).joined(separator: ",") + "/\(database)"
    }
}
