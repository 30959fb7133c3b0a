/// A reply from Redis, converted from hiredis's `redisReply` tree.
///
/// Bulk strings are decoded as UTF-8: everything this project stores in Redis is text (ids, JSON).
public enum RedisValue: Sendable, Hashable {
    case null
    case status(String)
    case error(String)
    case integer(Int)
    case bulk(String)
    case array([RedisValue])

    /// The text of a bulk or status reply.
    public var string: String? {
        switch self {
        case .bulk(let s), .status(let s): s
        case .integer(let i): String(i)
        default: nil
        }
    }

    /// An integer reply, or a bulk string that holds an integer (as `HGET` returns).
    public var int: Int? {
        switch self {
        case .integer(let i): i
        case .bulk(let s): Int(s)
        default: nil
        }
    }

    public var array: [RedisValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
