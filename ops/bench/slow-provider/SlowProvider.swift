import ArgumentParser
import Foundation
import Hummingbird
import JSON
import JobContracts
import Logging
import Postgres
import Queue
import Redis
import Synchronization

/// The slow-provider benchmark's helpers (`ops/bench/slow-provider.sh`), kept out of the `carbscan` product.
@main
struct SlowProvider: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slow-provider", abstract: "Slow OpenAI-compatible server and job seeding for ops/bench/slow-provider.sh.",
        subcommands: [Serve.self, Seed.self])
}

/// An OpenAI-compatible model that answers every `POST /v1/chat/completions` after a fixed delay, with a completion
/// whose content is what the chat or the analysis handler expects (an image part in the request: analysis). It only
/// counts: requests, those in flight now, the most ever in flight, and the wall time of the first and last answer
/// (`GET /stats`; `POST /stats/reset` zeroes them).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Serve the slow model.")

    @Option(help: "Port to listen on.") var port: Int = 8090
    @Option(help: "Milliseconds before each answer.") var delayMs: Int = 1000
    @Option(help: "Listen backlog (the kernel caps it at net.core.somaxconn).") var backlog: Int = 16384

    func run() async throws {
        var logger = Logger(label: "slow-provider")
        logger.logLevel = .warning
        let counters = Counters()
        let chat = Self.completion([
            "response": "A medium apple has about 25 g of carbohydrates, 4 g of them fibre.", "messageType": "carb_lookup",
            "followUpQuestions": ["And a banana?", "How about apple juice?"],
        ])
        let analysis = Self.completion([
            "compositeItemName": "Spaghetti bolognese", "carbEstimate": 72, "confidenceLow": 60, "confidenceHigh": 85,
            "confidenceLevel": 0.8, "analysis": "About 250 g of cooked spaghetti (70 g carbs) and a tomato meat sauce (2 g).",
        ])
        let imagePart = Array(#""image_url""#.utf8)
        let delay = Duration.milliseconds(delayMs)
        let router = Router()
        router.post("v1/chat/completions") { request, _ -> Response in
            counters.started()
            defer { counters.finished() }
            let body = try await request.body.collect(upTo: 64 << 20)
            let isAnalysis = body.readableBytesView.firstRange(of: imagePart) != nil
            try await Task.sleep(for: delay)
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: isAnalysis ? analysis : chat)))
        }
        router.get("stats") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: counters.json)))
        }
        router.post("stats/reset") { _, _ -> HTTPResponse.Status in
            counters.reset()
            return .noContent
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), backlog: backlog), logger: logger)
        try await app.runService()
    }

    static func completion(_ content: JSONValue) -> [UInt8] {
        let completion: JSONValue = [
            "id": "chatcmpl-bench", "object": "chat.completion", "created": 1_700_000_000, "model": "gpt-4o-mini",
            "choices": [["index": 0, "message": ["role": "assistant", "content": .string(content.jsonString)], "finish_reason": "stop"]],
            "usage": ["prompt_tokens": 100, "completion_tokens": 60, "total_tokens": 160],
        ]
        return Array(completion.jsonString.utf8)
    }
}

final class Counters: Sendable {
    private struct State {
        var requests = 0
        var inFlight = 0
        var peakInFlight = 0
        var first: Double?
        var last: Double?
    }
    private let state = Mutex(State())

    func started() {
        let now = Date().timeIntervalSince1970
        state.withLock {
            $0.requests += 1
            $0.inFlight += 1
            $0.peakInFlight = max($0.peakInFlight, $0.inFlight)
            if $0.first == nil { $0.first = now }
        }
    }

    func finished() {
        let now = Date().timeIntervalSince1970
        state.withLock {
            $0.inFlight -= 1
            $0.last = now
        }
    }

    func reset() { state.withLock { $0 = State() } }

    var json: String {
        state.withLock { state in
            let value: JSONValue = [
                "requests": .int(state.requests), "inFlight": .int(state.inFlight), "peakInFlight": .int(state.peakInFlight),
                "firstRequestAt": state.first.map(JSONValue.double) ?? .null, "lastAnswerAt": state.last.map(JSONValue.double) ?? .null,
            ]
            return value.jsonString
        }
    }
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
