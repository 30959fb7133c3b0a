/// A Lua script run with `EVALSHA`. The client loads it once per server (`SCRIPT LOAD`) and
/// reloads it when the server answers `NOSCRIPT` (after a restart or `SCRIPT FLUSH`).
public struct RedisScript: Sendable, Hashable {
    public let name: String
    public let source: String

    public init(name: String, source: String) {
        self.name = name
        self.source = source
    }
}
