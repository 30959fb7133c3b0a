import Foundation
import HTTPTypes
import JSON
import OutboundHTTP
import Store
import TestSupport
import Testing
import Workers

/// `POST /analyze` end to end: photo intake, the scan quota, the worker and a local OpenAI-compatible model.
@Suite struct AnalyzeRoutesTests {
    static let estimate: JSONValue = [
        "compositeItemName": "Chicken salad with rice", "carbEstimate": 45, "confidenceLow": 40, "confidenceHigh": 50,
        "confidenceLevel": 0.85, "analysis": "Rice 40 g, dressing 5 g.",
    ]
    static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + Array(repeating: 0x42, count: 200)
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 1, count: 50)
    static let webp: [UInt8] = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8 ".utf8) + Array(repeating: 2, count: 40)
    static let heic: [UInt8] = [0, 0, 0, 0x18] + Array("ftypheic".utf8) + Array(repeating: 3, count: 40)

    func remaining(_ api: TestAPI, _ userID: String) async throws -> Int {
        try await api.database.query("SELECT remaining_scans FROM users WHERE id = $1", [userID])[0].decode(0)
    }

    func count(_ api: TestAPI, _ table: String) async throws -> Int {
        try await api.database.query("SELECT count(*) FROM \(table)")[0].decode(0)
    }

    @Test func aPhotoIsAnalysedInTheSeedsShape() async throws {
        let model = try await OpenAIServer.start(fallback: .json(Self.estimate))
        defer { model.stop() }
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let response = try await client.call(
                .post, "analyze", token: account.accessToken,
                json: [
                    "imageBase64": Data(Self.jpeg).base64EncodedString(),
                    "metadata": ["deviceModel": "iPhone 15 Pro", "lighting": "natural"],
                ])
            worker.stop()
            try await task.value
            #expect(response.status == 200)
            #expect(response.data["analysis"]["carbEstimate"].double == 45)
            #expect(response.data["analysis"]["compositeItemName"].string == "Chicken salad with rice")
            #expect(response.data["scanUsage"]["remainingScans"].int == 2)
            #expect(response.data["scanUsage"]["subscriptionTier"].string == "free")
            let mealID = try #require(response.data["mealId"].int)
            let meals = try await client.call(.get, "meals", token: account.accessToken)
            #expect(meals.data["meals"][0]["id"].int == mealID)
            #expect(meals.data["meals"][0]["name"].string == "Chicken salad with rice")
            // The photo went to Postgres; the job carried only its id.
            #expect(try await count(api, "meal_photos") == 1)
            #expect(model.received.first?.body.contains("data:image/jpeg;base64,") == true)
        }
    }

    @Test func multipartPhotosAndEveryImageTypeAreAccepted() async throws {
        try await TestAPI.run(environment: ["SYNC_WAIT_SECONDS": "0"]) { api, client in
            let account = try await api.register(client)
            try await api.setTier(.pro, userID: account.id)
            for (bytes, type) in [(Self.png, "image/png"), (Self.webp, "image/webp"), (Self.heic, "image/heic")] {
                let boundary = "XyZ\(UUID().uuidString.prefix(6))"
                var body = Data(
                    "--\(boundary)\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{\"appVersion\":\"1.0.0\"}\r\n".utf8)
                body += Data(
                    "--\(boundary)\r\nContent-Disposition: form-data; name=\"image\"; filename=\"meal\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                        .utf8)
                body += Data(bytes) + Data("\r\n--\(boundary)--\r\n".utf8)
                let response = try await client.call(
                    .post, "analyze", token: account.accessToken, bytes: Array(body),
                    headers: [.contentType: "multipart/form-data; boundary=\(boundary)"])
                #expect(response.status == 202, "\(type)")
                let stored = try await api.database.query("SELECT content_type FROM meal_photos ORDER BY id DESC LIMIT 1")
                #expect(try stored.first?.decode(0, as: String.self) == type)
            }
        }
    }

    @Test func badPhotosAreRefusedAndNothingIsStored() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let gif = Array("GIF89a".utf8) + Array(repeating: 0, count: 20)
            let cases: [([String: Any], String)] = [
                (["imageBase64": Data(gif).base64EncodedString()], "UNSUPPORTED_IMAGE"),
                (["imageBase64": "not base64 at all!!"], "VALIDATION_ERROR"),
                (["metadata": [:] as [String: String]], "VALIDATION_ERROR"),
                (["imageBase64": Data(Self.jpeg).base64EncodedString(), "metadata": ["gps": "52,13"]], "VALIDATION_ERROR"),
            ]
            for (body, code) in cases {
                let response = try await client.call(.post, "analyze", token: account.accessToken, json: body)
                #expect(response.status == 400, "\(code)")
                #expect(response.errorCode == code)
            }
            // Over 10 MiB decoded: 413, told before the body is read (by its size).
            let big = String(repeating: "A", count: 14_100_000)
            let tooLarge = try await client.call(.post, "analyze", token: account.accessToken, body: #"{"imageBase64":"\#(big)"}"#)
            #expect(tooLarge.status == 413)
            #expect(tooLarge.errorCode == "PAYLOAD_TOO_LARGE")
            #expect(try await count(api, "meal_photos") == 0)
            #expect(try await remaining(api, account.id) == 3)
            #expect(try await api.queue.stats().first { $0.queue == "ai" }?.queued == 0)
        }
    }

    /// Every 413 of `POST analyze` states the image's limit, 10 MiB, in its message and `details.limit`, as the
    /// document's `ImageTooLarge` does, whichever size gave it away: the document said 1 MiB (the other routes' body
    /// limit), and the body-size refusals named the body's limit instead.
    @Test func everyTooLargeImageIsRefusedWithTheDocumentedLimit() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let document = try await OpenAPITests.servedDocument(client)
            let operation = try #require(document.operations.first { $0.method == "POST" && $0.path == "/api/mobile/v1/analyze" })
            let documented = try #require(operation.responses["413"].flatMap(document.dereferenced))
            guard case .string(let description)? = documented["description"] else { throw TestFailure("no 413 description") }
            #expect(description.contains("10 MiB (10485760 bytes)"), "\(description)")
            let example = try #require(documented["content"]?["application/json"]?["example"]?["error"])
            #expect(example["message"] == .string("the image is larger than 10 MiB (10485760 bytes)"))
            #expect(example["details"]?["limit"] == .int(10_485_760))

            let boundary = "b0undary"
            let multipart =
                Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"image\"; filename=\"meal\"\r\n\r\n".utf8)
                + Self.jpeg + Array(repeating: 0x42, count: 10_551_296) + Array("\r\n--\(boundary)--\r\n".utf8)
            let refusals = [
                // Base64 of more than 10 MiB, in a body the JSON limit takes: refused by the decoded size.
                try await client.call(
                    .post, "analyze", token: account.accessToken, body: #"{"imageBase64":"\#(String(repeating: "A", count: 14_000_000))"}"#,
                    headers: [.contentType: "application/json"]),
                // A JSON body over its limit: refused by its Content-Length.
                try await client.call(
                    .post, "analyze", token: account.accessToken, body: #"{"imageBase64":"\#(String(repeating: "A", count: 14_100_000))"}"#,
                    headers: [.contentType: "application/json"]),
                // A multipart body over its limit.
                try await client.call(
                    .post, "analyze", token: account.accessToken, bytes: multipart,
                    headers: [.contentType: "multipart/form-data; boundary=\(boundary)"]),
            ]
            for refused in refusals {
                #expect(refused.status == 413 && refused.errorCode == "PAYLOAD_TOO_LARGE", "\(refused.text.prefix(300))")
                #expect(refused.json["error"]["message"].string == "the image is larger than 10 MiB (10485760 bytes)")
                #expect(refused.json["error"]["details"]["limit"].int == 10_485_760)
                let schema = try #require(document.responseSchema(operation, status: 413))
                #expect(document.violations(of: try JSONValue(parsing: refused.text), against: schema) == [])
            }
            #expect(try await count(api, "meal_photos") == 0)
        }
    }

    /// 202 and a poll give what the 200 gives: `GET jobs/{id}` of a succeeded analysis has the `AnalysisResult`, with
    /// the scans left as of that answer (it had the job's `mealId` and `analysis` only, no `scanUsage`).
    @Test func aPolledAnalysisJobCarriesTheBodyOfThe200() async throws {
        let model = try await OpenAIServer.start(fallback: .json(Self.estimate))
        defer { model.stop() }
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let accepted = try await client.call(
                .post, "analyze", token: account.accessToken, json: ["imageBase64": Data(Self.jpeg).base64EncodedString()],
                headers: [.init("Prefer")!: "respond-async"])
            #expect(accepted.status == 202, "\(accepted.text)")
            let jobID = try #require(accepted.data["jobId"].string)
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let job = try await client.call(.get, "jobs/\(jobID)?wait=15", token: account.accessToken)
            worker.stop()
            try await task.value
            #expect(job.data["status"].string == "succeeded", "\(job.text)")
            let result = job.data["result"]
            #expect(result.keys == ["analysis", "mealId", "scanUsage"])
            #expect(result["analysis"]["carbEstimate"].double == 45)
            #expect(result["scanUsage"]["remainingScans"].int == 2)
            #expect(result["scanUsage"]["subscriptionTier"].string == "free")
            #expect(result["scanUsage"]["scanResetDate"].string != nil)
            let meals = try await client.call(.get, "meals", token: account.accessToken)
            #expect(result["mealId"].int == meals.data["meals"][0]["id"].int)

            let document = try await OpenAPITests.servedDocument(client)
            let polled = try #require(try JSONValue(parsing: job.text)["data"]?["result"])
            #expect(document.violations(of: polled, against: ["$ref": "#/components/schemas/AnalysisResult"]) == [])
        }
    }

    @Test func scansRunOutWithTheSeedsDetails() async throws {
        try await TestAPI.run(environment: ["SYNC_WAIT_SECONDS": "0"]) { api, client in
            let account = try await api.register(client)
            for _ in 0..<3 {
                let accepted = try await client.call(
                    .post, "analyze", token: account.accessToken, json: ["imageBase64": Data(Self.jpeg).base64EncodedString()])
                #expect(accepted.status == 202)
            }
            let refused = try await client.call(
                .post, "analyze", token: account.accessToken, json: ["imageBase64": Data(Self.jpeg).base64EncodedString()])
            #expect(refused.status == 429)
            #expect(refused.errorCode == "NO_SCANS_REMAINING")
            #expect(refused.json["error"]["details"]["remainingScans"].int == 0)
            #expect(refused.json["error"]["details"]["subscriptionTier"].string == "free")
            #expect(refused.json["error"]["details"]["scanResetDate"].string != nil)
            #expect(try await count(api, "meal_photos") == 3)
            #expect(try await remaining(api, account.id) == 0)
        }
    }

    @Test func withoutAnAIModelTheScanComesBack() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiAPIKey: "sk-test"))
            let response = try await client.call(
                .post, "analyze", token: account.accessToken, json: ["imageBase64": Data(Self.jpeg).base64EncodedString()])
            // The scan comes back when the upkeep leader settles the dead job (every 100 ms here), not with the 502.
            #expect(try await eventually { try await remaining(api, account.id) == 3 })
            worker.stop()
            try await task.value
            #expect(response.status == 502)
            #expect(response.errorCode == "JOB_FAILED")
            #expect(response.json["error"]["message"].string?.contains("AI_BASE_URL is not configured") == true)
            #expect(try await count(api, "meals") == 0)
        }
    }
}
