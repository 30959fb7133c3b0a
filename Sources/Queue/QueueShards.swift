import Redis
import Synchronization

/// A queue split into shards (`shards: N` in its kinds' files): each shard is a queue of its own in Redis, with its own
/// `{queue#k}` hash tag, so a Redis Cluster places the shards on different nodes and one busy queue is served by
/// several. Producers spread jobs over the shards; workers read them all.
///
/// Resharding loses no job: every process records the largest shard count it was configured with (`prefix:shards`, a
/// sorted set, `ZADD GT`), and readers (workers, upkeep, look-ups, stats) cover every shard ever used, plus the
/// unsharded queue itself, which held the jobs before the queue was first split. Only producers use the configured count.
public enum QueueShards {
    /// The Redis queues holding `queue`'s jobs with `count` shards: `queue` itself for 1, else `queue#0` … `queue#N-1`.
    public static func names(_ queue: String, count: Int) -> [String] {
        count <= 1 ? [queue] : (0..<count).map { "\(queue)#\($0)" }
    }

    /// The queue a shard belongs to: `ai#3` → `ai` (an unsharded queue is its own).
    public static func queue(ofShard name: String) -> String {
        name.firstIndex(of: "#").map { String(name[..<$0]) } ?? name
    }
}

/// What a process knows of its queues' shards: the configured counts, raised to the largest recorded in Redis.
final class ShardMap: Sendable {
    private let configured: [String: Int]
    private let readCounts: Mutex<[String: Int]>
    private let turn = Atomic<Int>(0)
    private let lastSync = Mutex<ContinuousClock.Instant?>(nil)
    /// How long what was learned of the shards is trusted before it is read again.
    static let syncInterval = Duration.seconds(5)

    init(catalog: JobCatalog) {
        configured = Dictionary(uniqueKeysWithValues: catalog.queues.map { ($0, catalog.shardCount(of: $0)) })
        readCounts = Mutex(configured)
    }

    /// The shard a new job of `queue` goes to: by `key` when it has one (a unique key or a cron schedule: the same key
    /// always lands on the same shard, so uniqueness and once-per-fire stay exact), else in turn.
    /// How many shards new jobs of `queue` are spread over.
    func producerCount(of queue: String) -> Int { configured[queue] ?? 1 }

    func shard(of queue: String, key: String?) -> String {
        let count = configured[queue] ?? 1
        guard count > 1 else { return queue }
        let index = key.map { HashSlot.of($0) % count } ?? turn.wrappingAdd(1, ordering: .relaxed).oldValue % count
        return "\(queue)#\(index)"
    }

    /// Every Redis queue to read for `queue`: its shards up to the largest count ever used, and the unsharded queue.
    func readable(_ queue: String) -> [String] {
        let count = readCounts.withLock { $0[queue] } ?? 1
        return count <= 1 ? [queue] : [queue] + QueueShards.names(queue, count: count)
    }

    /// Syncs (see `sync`) unless it was done less than `syncInterval` ago; a failure is retried after it too (the
    /// configured counts serve meanwhile).
    func syncIfStale(redis: RedisClient, key: String) async {
        let due = lastSync.withLock { last in
            if let last, ContinuousClock.now - last < Self.syncInterval { return false }
            last = .now
            return true
        }
        if due { _ = try? await sync(redis: redis, key: key) }
    }

    /// Records the configured counts and learns the largest ever used. Returns whether a count to read changed.
    func sync(redis: RedisClient, key: String) async throws -> Bool {
        lastSync.withLock { $0 = .now }
        var commands = configured.sorted { $0.key < $1.key }.map { ["ZADD", key, "GT", String($0.value), $0.key] }
        commands.append(["ZRANGE", key, "0", "-1", "WITHSCORES"])
        let replies = try await redis.pipeline(commands)
        if case .error(let message) = replies.first(where: \.isError) ?? .null { throw RedisError(.server, message) }
        let recorded = replies.last?.array ?? []
        var counts = configured
        for pair in stride(from: 0, to: recorded.count - 1, by: 2) {
            guard let queue = recorded[pair].string, let count = recorded[pair + 1].string.flatMap(Double.init), counts[queue] != nil
            else { continue }
            counts[queue] = max(counts[queue]!, Int(count))
        }
        return readCounts.withLock { current in
            defer { current = counts }
            return current != counts
        }
    }
}
