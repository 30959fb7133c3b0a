/// One Redis server's address: a standalone server, or one node of a cluster.
public struct RedisEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port` as Redis writes it in `MOVED`/`ASK` replies (an IPv6 host is not bracketed there).
    init?(redirection address: Substring, defaultHost: String) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else { return nil }
        let host = String(address[..<colon])
        self.init(host: host.isEmpty ? defaultHost : host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
