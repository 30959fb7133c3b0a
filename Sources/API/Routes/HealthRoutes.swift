import Foundation
import Hummingbird
import Postgres
import Queue
import Redis

/// `health` (checks Redis and Postgres), `config` (seed 001's feature flags and limits), `openapi.json`.
struct HealthRoutes {
    let database: PostgresClient
    let redis: RedisClient
    let queue: JobQueue
    let openAPIDocument: Data

    func register(on api: RouteTable) {
        api.get("health", health)
        api.get("config") { _, _ in try Envelope.success(Self.appConfig) }
        api.get("openapi.json") { _, _ in
            Envelope.response(status: .ok, body: Array(openAPIDocument), headers: [:])
        }
    }

    struct Health: Encodable {
        var status: String
        var serverTime: Date
        var apiVersion = "v1"
        var checks: [String: String]
        /// What works now but can lose data later (Redis allowed to evict keys); empty when nothing is amiss.
        var warnings: [String]
    }

    func health(_ request: Request, _ context: APIContext) async throws -> Response {
        async let redisCheck = Self.check { _ = try await redis.send(["PING"]) }
        async let postgresCheck = Self.check { _ = try await database.query("SELECT 1") }
        let checks = ["redis": await redisCheck, "postgres": await postgresCheck]
        if checks.values.allSatisfy({ $0 == "ok" }) {
            let warning = try? await queue.evictionWarning()
            return try Envelope.success(Health(status: "healthy", serverTime: Date(), checks: checks, warnings: warning.map { [$0] } ?? []))
        }
        context.logger.warning("health check failed", metadata: ["checks": "\(checks)"])
        throw APIError(
            .serviceUnavailable, "SERVICE_UNAVAILABLE", "A backing service is unavailable",
            details: checks.mapValues { .string($0) })
    }

    private static func check(_ probe: () async throws -> Void) async -> String {
        do {
            try await probe()
            return "ok"
        } catch {
            return "unavailable"
        }
    }

    struct AppConfig: Encodable {
        var features = ["aiChat": true, "mealScanning": true, "insights": true, "offlineMode": true]
        var limits = ["maxImageSize": 10_485_760, "maxChatMessageLength": 1000]
        var endpoints = [
            "analyze": "/api/mobile/v1/analyze", "chat": "/api/mobile/v1/chat", "meals": "/api/mobile/v1/meals",
            "sync": "/api/mobile/v1/meals/sync",
        ]
    }

    static let appConfig = AppConfig()
}
