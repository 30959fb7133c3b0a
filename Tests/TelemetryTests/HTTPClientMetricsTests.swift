import Foundation
import Hummingbird
import OutboundHTTP
import Redis
import TestSupport
import Testing
import Workers

@testable import Telemetry

/// Outbound calls counted per provider by outcome class, with their durations, and rate-limit waits.
@Suite struct HTTPClientMetricsTests {
    @Test func callsAreCountedByProviderAndOutcomeClass() async throws {
        let router = Router()
        router.get("/ok") { _, _ in "fine" }
        router.get("/moved") { _, _ in Response(status: .found, headers: [.location: "/ok"]) }
        router.get("/missing") { _, _ -> Response in throw HTTPError(.notFound) }
        router.get("/broken") { _, _ -> Response in throw HTTPError(.internalServerError) }
        router.get("/slow") { _, _ -> String in
            try await Task.sleep(for: .seconds(2))
            return "late"
        }
        let server = try await LocalServer.start(router, name: "provider")
        defer { server.stop() }
        let telemetry = Telemetry()
        let client = HTTPClient(observer: HTTPClientMetrics(telemetry: telemetry))
        defer { client.shutdown() }
        for path in ["/ok", "/ok", "/moved", "/missing", "/broken"] {
            _ = try await client.send(OutboundHTTP.HTTPRequest(url: server.url + path, provider: "ai"))
        }
        await #expect(throws: HTTPClientError.self) {
            try await client.send(OutboundHTTP.HTTPRequest(url: server.url + "/slow", provider: "ai"), totalTimeout: .milliseconds(200))
        }
        let refused = PrivateRedis.freeLoopbackPort()
        await #expect(throws: HTTPClientError.self) {
            try await client.send(OutboundHTTP.HTTPRequest(url: "http://127.0.0.1:\(refused)/x", provider: "ai"))
        }
        // A URL the client refuses before sending is a failed call too.
        await #expect(throws: HTTPClientError.self) {
            try await client.send(OutboundHTTP.HTTPRequest(url: "ftp://127.0.0.1/x", provider: "ai"))
        }
        _ = try await client.send(OutboundHTTP.HTTPRequest(url: server.url + "/ok"))
        let scrape = Scrape(text: try await telemetry.scrape())
        let counts = ["2xx": 2, "3xx": 1, "4xx": 1, "5xx": 1, "timeout": 1, "error": 2]
        for (outcome, count) in counts {
            #expect(
                scrape.value("carbscan_http_client_requests_total", [("provider", "ai"), ("outcome", outcome)]) == Double(count),
                "\(outcome): \(scrape.text)")
        }
        #expect(scrape.value("carbscan_http_client_request_duration_seconds_count", [("provider", "ai")]) == 8)
        let slowest = try #require(scrape.value("carbscan_http_client_request_duration_seconds_sum", [("provider", "ai")]))
        #expect(slowest >= 0.2)
        // A call that names no provider counts as `other`; the URL never becomes a label.
        #expect(scrape.value("carbscan_http_client_requests_total", [("provider", "other"), ("outcome", "2xx")]) == 1)
        #expect(!scrape.text.contains("127.0.0.1"))
    }

    @Test func aWaitForARateLimitTokenIsCounted() async throws {
        let telemetry = Telemetry()
        let redis = try RedisClient(url: TestServices.redisURL)
        defer { redis.close() }
        let limiter = RateLimiter(
            redis: redis, prefix: "test-metrics-\(UUID().uuidString.prefix(8))", observer: HTTPClientMetrics(telemetry: telemetry))
        // A burst of 1 at one token per 100 s: the first is there, the second is waited for (the wait is counted
        // before it sleeps; the test then ends it).
        try await limiter.acquire(name: "stripe", perSecond: 0.01, burst: 1)
        let second = Task { try await limiter.acquire(name: "stripe", perSecond: 0.01, burst: 1) }
        defer { second.cancel() }
        #expect(
            try await eventually(timeout: .seconds(20)) {
                let scrape = Scrape(text: try await telemetry.scrape())
                return scrape.value("carbscan_http_client_rate_limit_waits_total", [("provider", "stripe")]) == 1
            })
    }
}
