/// A cluster's `MOVED <slot> <host:port>` (the slot lives elsewhere now: ask there, and remember) or
/// `ASK <slot> <host:port>` (the slot is being migrated and this key has gone: ask there once, after `ASKING`). The
/// command was not run either way.
struct Redirection: Equatable {
    enum Kind { case moved, ask }
    let kind: Kind
    let slot: Int
    let node: RedisEndpoint

    init?(_ message: String, defaultHost: String) {
        let kind: Kind
        if message.hasPrefix("MOVED ") {
            kind = .moved
        } else if message.hasPrefix("ASK ") {
            kind = .ask
        } else {
            return nil
        }
        let parts = message.split(separator: " ")
        guard parts.count >= 3, let slot = Int(parts[1]), (0..<HashSlot.count).contains(slot),
            let node = RedisEndpoint(redirection: parts[2], defaultHost: defaultHost)
        else { return nil }
        self.kind = kind
        self.slot = slot
        self.node = node
    }
}
