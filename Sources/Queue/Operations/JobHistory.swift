import Foundation
import Redis

/// The per-minute history of ended jobs (the dashboard's 24 h chart): each worker counts in memory and adds its counts
/// at each beat to `prefix:history:<minute>` (`HINCRBY` of `<kind>|ok`, `<kind>|fail`, `<kind>|ms`; kept 25 h).
public struct JobHistory: Sendable {
    let redis: RedisClient
    let keys: OperationsKeys
    /// How long a minute's hash is kept.
    static let keptSeconds = 25 * 3600

    public init(queue: JobQueue) {
        self.redis = queue.redis
        self.keys = queue.operationsKeys
    }

    /// The last `minutes` minutes (1…1500), oldest first, the current minute last; a minute with no job has no kinds.
    public func history(minutes: Int) async throws -> [HistoryMinute] {
        let count = min(max(minutes, 1), 1500)
        let now = Self.minute(of: Date())
        let starts = (0..<count).reversed().map { now - Int64($0) * 60 }
        let replies = try await redis.pipeline(starts.map { ["HGETALL", keys.history(minute: $0)] })
        return zip(starts, replies).map { start, reply in
            var kinds: [String: KindMinute] = [:]
            for (field, value) in reply.fields ?? [:] {
                guard let bar = field.lastIndex(of: "|"), let number = value.string.flatMap(Int.init) else { continue }
                let kind = String(field[..<bar])
                switch field[field.index(after: bar)...] {
                case "ok": kinds[kind, default: .init()].succeeded += number
                case "fail": kinds[kind, default: .init()].failed += number
                case "ms": kinds[kind, default: .init()].milliseconds += number
                default: continue
                }
            }
            return HistoryMinute(minute: Date(timeIntervalSince1970: TimeInterval(start)), kinds: kinds)
        }
    }

    /// The start of `date`'s minute in Unix seconds.
    static func minute(of date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) / 60 * 60 }

    /// The commands that add `counts` (minute start → kind → counts) to the history.
    func commands(adding counts: [Int64: [String: KindMinute]]) -> [[String]] {
        var commands: [[String]] = []
        for (minute, kinds) in counts.sorted(by: { $0.key < $1.key }) {
            let key = keys.history(minute: minute)
            for (kind, c) in kinds.sorted(by: { $0.key < $1.key }) {
                if c.succeeded > 0 { commands.append(["HINCRBY", key, kind + "|ok", String(c.succeeded)]) }
                if c.failed > 0 { commands.append(["HINCRBY", key, kind + "|fail", String(c.failed)]) }
                if c.milliseconds > 0 { commands.append(["HINCRBY", key, kind + "|ms", String(c.milliseconds)]) }
            }
            commands.append(["EXPIRE", key, String(Self.keptSeconds)])
        }
        return commands
    }
}
