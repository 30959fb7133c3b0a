/// Where a command goes in a cluster: the node of its keys' slot, any node, or nowhere (a command that would answer
/// for one node only, which on a cluster is a wrong answer, not a partial one).
enum CommandRoute: Equatable {
    /// The node serving this slot.
    case slot(Int)
    /// Any node: the command reads or changes no key (`PING`, `CLIENT ID`, `SCRIPT LOAD`, `PUBLISH`).
    case anyNode
    /// Not routable: why, for the error.
    case unroutable(String)

    /// The route of `command`. Its keys must share a slot (else Redis answers `CROSSSLOT`, and so do we, before
    /// sending).
    static func of(_ command: [String]) -> CommandRoute {
        guard let name = command.first?.uppercased() else { return .unroutable("an empty command") }
        if let why = oneNodeOnly[name] { return .unroutable("\(name) \(why)") }
        guard let keys = keyIndices(name, command), !keys.isEmpty else { return .anyNode }
        let slot = HashSlot.of(command[keys[0]])
        for index in keys.dropFirst() where HashSlot.of(command[index]) != slot {
            return .unroutable("CROSSSLOT \(name): its keys are in different slots (give them one {hash tag})")
        }
        return .slot(slot)
    }

    /// Commands whose answer covers one node's keys only.
    private static let oneNodeOnly: [String: String] = [
        "SCAN": "lists one node's keys: use forEachKeyBatch, which scans every master",
        "KEYS": "lists one node's keys: use forEachKeyBatch",
        "DBSIZE": "counts one node's keys: ask every master",
        "RANDOMKEY": "picks among one node's keys",
        "FLUSHDB": "empties one node: use onEveryMaster",
        "FLUSHALL": "empties one node: use onEveryMaster",
        "WATCH": "watches on one connection of a pool",
    ]

    /// Commands that name no key at all.
    private static let keyless: Set<String> = [
        "PING", "ECHO", "INFO", "TIME", "CLIENT", "SCRIPT", "CLUSTER", "CONFIG", "COMMAND", "AUTH", "HELLO", "SELECT",
        "READONLY", "READWRITE", "ASKING", "PUBLISH", "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "PUBSUB",
        "WAIT", "SLOWLOG", "LASTSAVE", "ROLE", "MEMORY", "LATENCY", "FUNCTION", "DEBUG", "SAVE", "BGSAVE", "SHUTDOWN",
        "QUIT", "RESET", "MULTI", "EXEC", "DISCARD", "UNWATCH",
    ]

    /// The positions of `command`'s keys (nil or empty: none). Most commands take one key first; these differ.
    private static func keyIndices(_ name: String, _ command: [String]) -> [Int]? {
        if keyless.contains(name) {
            // `MEMORY USAGE key` names one; `PUBSUB SHARDNUMSUB` counts subscribers on its channels' node.
            let subcommand = command.count > 2 ? command[1].uppercased() : ""
            if name == "MEMORY" && subcommand == "USAGE" { return [2] }
            if name == "PUBSUB" && subcommand == "SHARDNUMSUB" { return Array(2..<command.count) }
            return nil
        }
        switch name {
        case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
            guard command.count > 2, let count = Int(command[2]), count >= 0, command.count >= 3 + count else { return nil }
            return Array(3..<(3 + count))
        case "XREAD", "XREADGROUP":
            guard let streams = command.firstIndex(where: { $0.uppercased() == "STREAMS" }) else { return nil }
            let count = (command.count - streams - 1) / 2
            return Array((streams + 1)..<(streams + 1 + count))
        case "DEL", "UNLINK", "EXISTS", "TOUCH", "MGET", "SINTER", "SUNION", "SDIFF", "PFCOUNT", "SINTERSTORE",
            "SUNIONSTORE", "SDIFFSTORE", "SSUBSCRIBE", "SUNSUBSCRIBE":
            return Array(1..<command.count)
        case "MSET", "MSETNX":
            return Array(stride(from: 1, to: command.count, by: 2))
        case "RENAME", "RENAMENX", "SMOVE", "LMOVE", "RPOPLPUSH", "BLMOVE", "BRPOPLPUSH", "COPY":
            return [1, 2].filter { $0 < command.count }
        case "BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX":
            return command.count > 2 ? Array(1..<(command.count - 1)) : nil
        case "XINFO", "OBJECT", "XGROUP":
            return command.count > 2 ? [2] : nil
        default:
            return command.count > 1 ? [1] : nil
        }
    }
}
