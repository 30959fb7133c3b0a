import ArgumentParser
import Hummingbird
import Logging
import Redis

/// `carbscan-bench hello-server`: Hummingbird's bare hello world, the yardstick of `ops/bench/api.sh`; and, at
/// `GET /redis`, the same plus one command through this project's Redis client (an `XADD` to a capped stream): the
/// least an enqueueing endpoint does, so what it could reach if everything else were free; and at `POST /body`, hello
/// world that first reads its request body whole (what a JSON endpoint's body costs Hummingbird, before any parsing).
struct HelloServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hello-server", abstract: "Serve Hummingbird's hello world (GET / → \"Hello!\") for the API benchmark.")

    @OptionGroup var global: BenchOptions

    @Option(help: "Port to listen on.") var port: Int = 8081

    func run() async throws {
        var logger = Logger(label: "hello")
        logger.logLevel = .warning
        let redis = try global.redis(logger: logger)
        let router = Router()
        router.get("/") { _, _ in "Hello!" }
        router.get("/redis") { _, _ in
            try await redis.send(["XADD", "carbscan-bench:hello", "MAXLEN", "~", "1000", "*", "f", "v"])
            return "Hello!"
        }
        router.post("/body") { request, _ in
            _ = try await request.body.collect(upTo: 1 << 20)
            return "Hello!"
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        try await app.runService()
        redis.close()
    }
}
