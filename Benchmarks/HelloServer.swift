import ArgumentParser
import Foundation
import Hummingbird
import JSON
import Logging
import Postgres
import Queue
import Redis
import Store

/// `carbscan-bench hello-server`: Hummingbird's bare hello world, the yardstick of `ops/bench/api.sh`, and hello world
/// plus the one thing an endpoint cannot skip, each through this project's own clients (what the endpoint could reach
/// if everything else were free):
/// - `GET /redis`: one command (an `XADD` to a capped stream), the least an enqueueing endpoint does;
/// - `POST /enqueue`: the request body read whole, then the `login-webhook` job `POST /logins` enqueues (the same
///   payload and owner, so the same `MULTI`…`EXEC`), without a token, parsing, validation or an envelope;
/// - `POST /body`: the request body read whole (what a JSON endpoint's body costs Hummingbird, before any parsing);
/// - `GET /page?user=ID&family=UUID`: the statement of `GET /meals` (a page of 20 meals with the account check) through
///   the Postgres client's pool of 8, its rows read off the connection but not decoded, and no token or envelope.
struct HelloServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hello-server", abstract: "Serve Hummingbird's hello world (GET / → \"Hello!\") for the API benchmark.")

    @OptionGroup var global: BenchOptions

    @Option(help: "Port to listen on.") var port: Int = 8081

    @Option(help: "Postgres URL for GET /page (env DATABASE_URL).")
    var databaseURL: String = ProcessInfo.processInfo.environment["DATABASE_URL"] ?? "postgres://127.0.0.1:55432/carbscan"

    @Option(help: "The key prefix of POST /enqueue's queue (env CARBSCAN_PREFIX).")
    var prefix: String = ProcessInfo.processInfo.environment["CARBSCAN_PREFIX"] ?? "carbscan-bench"

    func run() async throws {
        var logger = Logger(label: "hello")
        logger.logLevel = .warning
        let redis = try global.redis(logger: logger)
        var configuration = try PostgresConfiguration(url: databaseURL)
        configuration.poolSize = 8
        configuration.genericPlans = true  // as `serve`'s
        let database = PostgresClient(configuration: configuration, logger: logger)
        let queue = JobQueue(redis: redis, catalog: try global.catalog(), options: QueueOptions(prefix: prefix))
        let router = Router()
        router.get("/") { _, _ in "Hello!" }
        router.get("/redis") { _, _ in
            try await redis.send(["XADD", "carbscan-bench:hello", "MAXLEN", "~", "1000", "*", "f", "v"])
            return "Hello!"
        }
        router.post("/enqueue") { request, _ in
            _ = try await request.body.collect(upTo: 1 << 20)
            let payload: JSONValue = .object([
                "event": "signin", "eventId": .string(UUID().uuidString.lowercased()), "provider": "apple",
                "provider_uid": "001.bench", "email": .null, "display_name": .null, "client_timestamp": "2026-11-22T12:00:00.000Z",
            ])
            _ = try await queue.enqueue("login-webhook", payload: payload, options: EnqueueOptions(owner: "bench-user"))
            return "Hello!"
        }
        router.post("/body") { request, _ in
            _ = try await request.body.collect(upTo: 1 << 20)
            return "Hello!"
        }
        router.get("/page") { request, _ in
            guard let user = request.uri.queryParameters["user"].map(String.init),
                let family = request.uri.queryParameters["family"].flatMap({ UUID(uuidString: String($0)) })
            else { throw HTTPError(.badRequest, message: "user and family are required") }
            let rows = try await database.query(Meals.userPage, [user, family, Date(), 20, 0])
            return rows.isEmpty ? "None" : "Hello!"
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        try await app.runService()
        redis.close()
        database.shutdown()
    }
}
