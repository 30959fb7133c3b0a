import ArgumentParser
import Foundation
import JSON
import JobContracts
import Logging
import Postgres
import Queue
import Redis

/// The slow-provider benchmark's seeding (`ops/bench/slow-provider.sh`), kept out of the `carbscan` product. (Its
/// slow model is `ops/bench/slow_model.py`: the same server in Hummingbird took 2–3× the CPU per request.)
@main
struct SlowProvider: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slow-provider", abstract: "Job seeding for ops/bench/slow-provider.sh.", subcommands: [Seed.self])
}

/// Users, photos and reservations in Postgres as the API leaves them when it accepts a photo or a chat message
/// (reserved scans and chats, `pro` users so no quota runs out), then the jobs enqueued in batches, as the API
/// would have enqueued them: distinct photos and messages, so every job writes its own rows.
struct Seed: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "seed", abstract: "Seed users, photos and reservations; enqueue jobs.")

    @Option(help: "Redis URL (env REDIS_URL).")
    var redisURL: String = ProcessInfo.processInfo.environment["REDIS_URL"] ?? "redis://127.0.0.1:56379/0"
    @Option(help: "Postgres URL (env DATABASE_URL).")
    var databaseURL: String = ProcessInfo.processInfo.environment["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:55432/carbscan"
    @Option(help: "Folder of the job kind files (env CARBSCAN_JOBS_DIR).")
    var jobsDir: String = ProcessInfo.processInfo.environment["CARBSCAN_JOBS_DIR"] ?? "jobs"
    @Option(help: "Redis key prefix (env CARBSCAN_PREFIX).")
    var prefix: String = ProcessInfo.processInfo.environment["CARBSCAN_PREFIX"] ?? "carbscan"
    @Option(help: "Chat jobs.") var chats: Int = 0
    @Option(help: "Analysis jobs.") var analyses: Int = 0
    @Option(help: "Users the jobs are spread over.") var users: Int = 100
    @Option(help: "Bytes of each photo (a JPEG header, then random bytes).") var photoBytes: Int = 32_768

    func run() async throws {
        let logger = Logger(label: "slow-provider.seed")
        var configuration = try PostgresConfiguration(url: databaseURL)
        configuration.poolSize = 1
        let database = PostgresClient(configuration: configuration, logger: logger)
        defer { database.shutdown() }
        let redis = try RedisClient(url: redisURL, logger: logger)
        defer { redis.close() }
        let queue = JobQueue(redis: redis, catalog: try JobCatalog.load(directory: jobsDir), options: QueueOptions(prefix: prefix))

        let run = UUID().uuidString.prefix(8).lowercased()
        let userIDs = (0..<users).map { "bench-\(run)-\($0)" }
        try await database.execute(
            """
            INSERT INTO users (id, subscription_tier, remaining_scans, scan_reset_date)
            SELECT u, 'pro', 1000000000, now() + interval '30 days' FROM unnest($1::text[]) AS u
            """, [Self.array(userIDs)])
        let day = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate])
        var jobs: [(kind: String, payload: JSONValue, options: EnqueueOptions)] = []
        if chats > 0 {
            let messageIDs = (0..<chats).map { _ in UUID().uuidString.lowercased() }
            let owners = (0..<chats).map { userIDs[$0 % users] }
            try await database.execute(
                """
                INSERT INTO chat_reservations (message_id, user_id, day)
                SELECT m::uuid, u, $3 FROM unnest($1::text[], $2::text[]) AS t(m, u)
                """, [Self.array(messageIDs), Self.array(owners), day])
            try await database.execute(
                """
                INSERT INTO usage_counters (user_id, kind, period, used)
                SELECT u, 'chat', $2, count(*) FROM unnest($1::text[]) AS u GROUP BY u
                """, [Self.array(owners), day])
            for (index, messageID) in messageIDs.enumerated() {
                let parameters = ChatContract.Parameters(
                    userId: owners[index], messageId: messageID, message: "How many carbs are in a medium apple? (\(index))")
                jobs.append((ChatContract.name, try JSONValueEncoder().encode(parameters), EnqueueOptions()))
            }
        }
        if analyses > 0 {
            var bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0]
            bytes += (4..<max(4, photoBytes)).map { _ in UInt8.random(in: 0...255) }
            let owners = (0..<analyses).map { userIDs[$0 % users] }
            let photoIDs: [Int64] = try await database.query(
                """
                INSERT INTO meal_photos (user_id, content_type, byte_size, bytes)
                SELECT u, 'image/jpeg', $2, $3::bytea FROM unnest($1::text[]) WITH ORDINALITY AS t(u, n) ORDER BY n
                RETURNING id
                """, [Self.array(owners), bytes.count, bytes]
            ).map { try $0.decode("id") }
            try await database.execute(
                """
                INSERT INTO scan_reservations (photo_id, user_id)
                SELECT id, user_id FROM meal_photos WHERE id = ANY($1::bigint[])
                """, [Self.array(photoIDs.map(String.init))])
            for (index, photoID) in photoIDs.enumerated() {
                let parameters = AnalysisContract.Parameters(userId: owners[index], photoId: photoID)
                jobs.append((AnalysisContract.name, try JSONValueEncoder().encode(parameters), EnqueueOptions()))
            }
        }
        // The statistics a database that has been serving has. Each run deletes its rows, and autovacuum then records
        // the tables as empty: planning on that, Postgres settled a reservation through the partial index of open
        // ones (`*_reservations_open`, filtering 10,000 entries) instead of its key, and spent 1.9 ms of CPU per chat
        // until the next autoanalyze, after the run.
        try await database.execute("ANALYZE users, chat_reservations, usage_counters, meal_photos, scan_reservations")
        // Chats and analyses interleaved, as users would send them.
        jobs.shuffle()
        var enqueued = 0
        for start in stride(from: 0, to: jobs.count, by: 1000) {
            let results = try await queue.enqueue(Array(jobs[start..<min(start + 1000, jobs.count)]))
            enqueued += results.compactMap(\.id).count
        }
        print("seeded \(users) users; enqueued \(enqueued) jobs (\(chats) chats, \(analyses) analyses)")
    }

    /// A Postgres array literal of plain tokens (ids, UUIDs, numbers: no quotes, commas or braces to escape).
    static func array(_ items: [String]) -> String { "{" + items.joined(separator: ",") + "}" }
}
