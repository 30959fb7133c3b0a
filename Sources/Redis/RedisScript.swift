import Synchronization

/// Numbers the scripts, so the client finds a script's SHA by a number rather than by hashing its source
/// (several kilobytes) on every call: that hashing was 8% of a worker's CPU in the process benchmark.
private let scriptNumbers = Atomic<Int>(0)

/// A Lua script run with `EVALSHA`. The client loads it once per server (`SCRIPT LOAD`) and
/// reloads it when the server answers `NOSCRIPT` (after a restart or `SCRIPT FLUSH`). Make each script once
/// (a `static let`): every instance is a script of its own to the client's cache.
public struct RedisScript: Sendable, Hashable {
    public let name: String
    public let source: String
    /// This script's key in the client's cache of SHAs (made once, like the script itself).
    let number: Int

    public init(name: String, source: String) {
        self.name = name
        self.source = source
        self.number = scriptNumbers.wrappingAdd(1, ordering: .relaxed).oldValue
    }
}
