import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import Telemetry

/// API requests counted by route template, method and status: ids in paths never become labels.
@Suite struct APIMetricsMiddlewareTests {
    @Test func requestsAreCountedByRouteTemplateNeverByPath() async throws {
        let telemetry = Telemetry()
        let router = Router()
        router.add(middleware: APIMetricsMiddleware(telemetry: telemetry))
        let api = router.group("/api/mobile/v1")
        api.get("/jobs/:id") { _, context in try context.parameters.require("id") }
        api.post("/things") { _, _ in Response(status: .created) }
        api.get("/refused") { _, _ -> Response in throw HTTPError(.badRequest) }
        let app = Application(router: router)
        let secret = "tok-\(UUID().uuidString)"
        try await app.test(.router) { client in
            for id in ["01JOBID-ABC", "01JOBID-DEF"] {
                try await client.execute(uri: "/api/mobile/v1/jobs/\(id)", method: .get, headers: [.authorization: "Bearer \(secret)"]) {
                    #expect($0.status == .ok)
                }
            }
            try await client.execute(uri: "/api/mobile/v1/things", method: .post) { #expect($0.status == .created) }
            try await client.execute(uri: "/api/mobile/v1/refused", method: .get) { #expect($0.status == .badRequest) }
            try await client.execute(uri: "/no/such/route/01JOBID-XYZ?token=\(secret)", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/mobile/v1/things", method: .init("PURGE")!) { _ in }
        }
        let text = try await telemetry.scrape()
        let scrape = Scrape(text: text)
        let jobs = [("route", "/api/mobile/v1/jobs/:id"), ("method", "GET")]
        #expect(scrape.value("carbscan_api_requests_total", jobs + [("status", "200")]) == 2, "\(text)")
        #expect(scrape.value("carbscan_api_request_duration_seconds_count", jobs) == 2)
        #expect(
            scrape.value("carbscan_api_requests_total", [("route", "/api/mobile/v1/things"), ("method", "POST"), ("status", "201")]) == 1)
        #expect(
            scrape.value("carbscan_api_requests_total", [("route", "/api/mobile/v1/refused"), ("method", "GET"), ("status", "400")]) == 1)
        #expect(scrape.value("carbscan_api_requests_total", [("route", "unmatched"), ("method", "GET"), ("status", "404")]) == 1)
        #expect(scrape.labelValues.contains("OTHER"))
        for leaked in ["01JOBID", secret, "PURGE", "/no/such"] { #expect(!text.contains(leaked), "\(leaked)") }
    }

    @Test(arguments: [
        ("/api/mobile/v1/jobs/{id}", "/api/mobile/v1/jobs/:id"), ("/api/mobile/v1/health", "/api/mobile/v1/health"),
        ("NotFound", "unmatched"),
    ])
    func theRouteLabelIsTheTemplate(endpoint: String, label: String) {
        #expect(APIMetricsMiddleware<BasicRequestContext>.route(endpoint) == label)
        #expect(APIMetricsMiddleware<BasicRequestContext>.route(nil) == "unmatched")
    }
}
