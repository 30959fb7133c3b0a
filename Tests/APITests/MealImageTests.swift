import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JSON
import Postgres
import Queue
import Store
import TestSupport
import Testing
import Workers

/// A meal's photo: `imageUrl` on every meal while the photo is kept, and `GET meals/{id}/image` serving it to the
/// owner only, cacheable (strong `ETag`, `Cache-Control` bounded by retention, 304 on `If-None-Match`).
@Suite struct MealImageTests {
    static let thirtyDays = 30 * 86_400

    /// The answer with its body as bytes (a photo is not text).
    struct Fetched {
        var status: Int
        var headers: HTTPFields
        var bytes: [UInt8]
        var json: JSON { JSON(parsing: String(decoding: bytes, as: UTF8.self)) }
    }

    static func fetch(_ client: any TestClientProtocol, _ url: String, token: String?, headers: HTTPFields = [:]) async throws -> Fetched {
        var fields = headers
        if let token { fields[.authorization] = "Bearer \(token)" }
        let response = try await client.executeRequest(uri: url, method: .get, headers: fields, body: nil)
        return Fetched(status: Int(response.status.code), headers: response.headers, bytes: Array(response.body.readableBytesView))
    }

    static func etag(of bytes: [UInt8]) -> String {
        "\"" + SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() + "\""
    }

    static func path(ofMeal id: Int64) -> String { "/api/mobile/v1/meals/\(id)/image" }

    /// A photo stored as `POST analyze` stores it, and the meal an analysis made of it.
    static func mealWithPhoto(_ api: TestAPI, userID: String, bytes: [UInt8], type: String = "image/jpeg") async throws -> (
        meal: Int64, photo: Int64
    ) {
        let photo = try await MealPhotos(api.database).insert(userID: userID, contentType: type, bytes: bytes)
        let rows = try await api.database.query(
            "INSERT INTO meals (user_id, photo_id, name, carb_estimate) VALUES ($1, $2, 'Toast', 30) RETURNING id", [userID, photo])
        return (try rows[rows.startIndex].decode("id"), photo)
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return [0xFF, 0xD8, 0xFF] + (3..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    @Test func anAnalysedMealNamesItsImageWhichServesTheUploadedPhoto() async throws {
        let model = try await OpenAIServer.start(fallback: .json(AnalyzeRoutesTests.estimate))
        defer { model.stop() }
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"))
            let photo = AnalyzeRoutesTests.png
            let analysed = try await client.call(
                .post, "analyze", token: account.accessToken, json: ["imageBase64": Data(photo).base64EncodedString()])
            worker.stop()
            try await task.value
            #expect(analysed.status == 200, "\(analysed.text)")
            let mealID = try #require(analysed.data["mealId"].int)
            let url = Self.path(ofMeal: Int64(mealID))
            // An offline meal has no photo.
            let local: [String: Any] = [
                "localId": "l-1", "name": "Soup", "carbEstimate": 12,
                "createdAt": Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(Date() - 60),
            ]
            let synced = try await client.call(.post, "meals/sync", token: account.accessToken, json: ["localMeals": [local]])
            #expect(synced.status == 200)
            #expect(synced.data["modifiedMeals"].array.compactMap { $0["imageUrl"].string } == [url])

            let page = try await client.call(.get, "meals", token: account.accessToken)
            let meals = page.data["meals"].array
            #expect(meals.count == 2)
            let analysedMeal = try #require(meals.first { $0["id"].int == mealID })
            #expect(analysedMeal["imageUrl"].string == url)
            let offline = try #require(meals.first { $0["localId"].string == "l-1" })
            #expect(offline["imageUrl"].isNull)

            let image = try await Self.fetch(client, url, token: account.accessToken)
            #expect(image.status == 200)
            #expect(image.bytes == photo)
            #expect(image.headers[.contentType] == "image/png")
            #expect(image.headers[.contentLength] == "\(photo.count)")
            #expect(image.headers[.eTag] == Self.etag(of: photo))
            let cacheControl = try #require(image.headers[.cacheControl])
            let maxAge = try #require(Int(cacheControl.replacing("private, max-age=", with: "")), "\(cacheControl)")
            #expect(cacheControl.hasPrefix("private, max-age="))
            #expect((Self.thirtyDays - 120)...Self.thirtyDays ~= maxAge, "\(cacheControl)")
        }
    }

    @Test func aCurrentCopyIsNotSentAgain() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let photo = AnalyzeRoutesTests.jpeg
            let (meal, _) = try await Self.mealWithPhoto(api, userID: account.id, bytes: photo)
            let etag = Self.etag(of: photo)
            // The generated client sends the tag percent-encoded, as OpenAPI 3.0 serializes header parameters.
            let encoded = etag.replacing("\"", with: "%22")
            for condition in [etag, "W/\(etag)", "\"0000\", \(etag)", "*", encoded] {
                let answer = try await Self.fetch(
                    client, Self.path(ofMeal: meal), token: account.accessToken, headers: [.ifNoneMatch: condition])
                #expect(answer.status == 304, "If-None-Match: \(condition)")
                #expect(answer.bytes.isEmpty)
                #expect(answer.headers[.eTag] == etag)
                #expect(answer.headers[.cacheControl]?.hasPrefix("private, max-age=") == true)
            }
            // A copy of something else: the photo, whole.
            let stale = try await Self.fetch(
                client, Self.path(ofMeal: meal), token: account.accessToken,
                headers: [.ifNoneMatch: "\"\(String(repeating: "0", count: 64))\""])
            #expect(stale.status == 200)
            #expect(stale.bytes == photo)
            #expect(stale.headers[.eTag] == etag)
        }
    }

    /// Photos over the slice read at a time come whole, with and without a (stale) condition.
    @Test func aLargePhotoIsServedWhole() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let photo = Self.randomBytes(2 * (1 << 20) + 12_345)
            let (meal, _) = try await Self.mealWithPhoto(api, userID: account.id, bytes: photo)
            for headers: HTTPFields in [[:], [.ifNoneMatch: "\"stale\""]] {
                let image = try await Self.fetch(client, Self.path(ofMeal: meal), token: account.accessToken, headers: headers)
                #expect(image.status == 200)
                #expect(image.headers[.contentLength] == "\(photo.count)")
                #expect(image.bytes.count == photo.count)
                #expect(image.bytes == photo)
                #expect(image.headers[.eTag] == Self.etag(of: photo))
            }
        }
    }

    /// Another user's meal, an unknown id, a meal without a photo and a malformed id: one and the same 404.
    @Test func onlyTheOwnerSeesAnImage() async throws {
        try await TestAPI.run { api, client in
            let owner = try await api.register(client)
            let other = try await api.register(client)
            let (meal, _) = try await Self.mealWithPhoto(api, userID: owner.id, bytes: AnalyzeRoutesTests.jpeg)
            let withoutPhoto = try await api.insertMeal(userID: owner.id, carbs: 10, at: Date())
            let cases = [
                (Self.path(ofMeal: meal), other.accessToken), (Self.path(ofMeal: meal + 1000), owner.accessToken),
                (Self.path(ofMeal: withoutPhoto), owner.accessToken), ("/api/mobile/v1/meals/abc/image", owner.accessToken),
                ("/api/mobile/v1/meals/-1/image", owner.accessToken),
                ("/api/mobile/v1/meals/99999999999999999999/image", owner.accessToken),
            ]
            for (url, token) in cases {
                let answer = try await Self.fetch(client, url, token: token)
                #expect(answer.status == 404, "\(url)")
                #expect(answer.json["success"].bool == false)
                #expect(answer.json["error"]["code"].string == "NOT_FOUND")
                #expect(answer.json["error"]["message"].string == "Meal image not found")
                #expect(answer.headers[.eTag] == nil)
            }
            #expect(try await Self.fetch(client, Self.path(ofMeal: meal), token: owner.accessToken).status == 200)
        }
    }

    @Test func anImageNeedsAToken() async throws {
        try await TestAPI.run { api, client in
            let owner = try await api.register(client)
            let (meal, _) = try await Self.mealWithPhoto(api, userID: owner.id, bytes: AnalyzeRoutesTests.jpeg)
            for token in [nil, "not-a-token"] {
                let answer = try await Self.fetch(client, Self.path(ofMeal: meal), token: token)
                #expect(answer.status == 401)
                #expect(answer.json["error"]["code"].string == "UNAUTHORIZED")
                #expect(answer.bytes != AnalyzeRoutesTests.jpeg)
            }
        }
    }

    /// The app may cache an image until its photo's retention ends, no longer.
    @Test func cachingEndsWithThePhotosRetention() async throws {
        try await TestAPI.run(environment: ["PHOTO_RETENTION_DAYS": "2"]) { api, client in
            let account = try await api.register(client)
            let (meal, photo) = try await Self.mealWithPhoto(api, userID: account.id, bytes: AnalyzeRoutesTests.jpeg)
            func maxAge() async throws -> Int? {
                let image = try await Self.fetch(client, Self.path(ofMeal: meal), token: account.accessToken)
                #expect(image.status == 200)
                return image.headers[.cacheControl].flatMap { Int($0.replacing("private, max-age=", with: "")) }
            }
            try await api.database.execute("UPDATE meal_photos SET created_at = now() - interval '1 day' WHERE id = $1", [photo])
            #expect(try await maxAge().map { (86_400 - 120)...86_400 ~= $0 } == true)
            // Past retention, not yet deleted (the sweep runs hourly): served, but not to be cached.
            try await api.database.execute("UPDATE meal_photos SET created_at = now() - interval '3 days' WHERE id = $1", [photo])
            #expect(try await maxAge() == 0)
        }
    }

    /// Once photo-retention deleted the photo, the meal stays, its `imageUrl` is null (also in the next delta sync)
    /// and the image is 404.
    @Test func aPhotoDeletedByRetentionLeavesTheMealWithoutImage() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let (meal, photo) = try await Self.mealWithPhoto(api, userID: account.id, bytes: AnalyzeRoutesTests.jpeg)
            let before = try await client.call(.post, "meals/sync", token: account.accessToken, json: [String: Any]())
            #expect(before.data["modifiedMeals"][0]["imageUrl"].string == Self.path(ofMeal: meal))
            let cursor = try #require(before.data["serverTimestamp"].string)
            #expect(try await Self.fetch(client, Self.path(ofMeal: meal), token: account.accessToken).status == 200)

            try await api.database.execute("UPDATE meal_photos SET created_at = now() - interval '40 days' WHERE id = $1", [photo])
            let (worker, task) = api.startWorker(
                queue: "maintenance", settings: WorkerSettings(photoRetention: .seconds(Self.thirtyDays)), concurrency: 1)
            let job = try #require(try await api.queue.enqueue("photo-retention", payload: .object([:]), options: .init(indexed: true)).id)
            let record = try await api.dependencies.waiter.wait(for: job, timeout: .seconds(30))
            worker.stop()
            try await task.value
            #expect(record?.status == .succeeded)
            #expect(try await api.database.query("SELECT id FROM meal_photos WHERE id = $1", [photo]).isEmpty)

            let page = try await client.call(.get, "meals", token: account.accessToken)
            #expect(page.data["meals"].array.compactMap { $0["id"].int } == [Int(meal)])
            #expect(page.data["meals"][0]["imageUrl"].isNull)
            let after = try await client.call(.post, "meals/sync", token: account.accessToken, json: ["lastSyncTimestamp": cursor])
            #expect(after.data["modifiedMeals"].array.compactMap { $0["id"].int } == [Int(meal)])
            #expect(after.data["modifiedMeals"][0]["imageUrl"].isNull)
            let gone = try await Self.fetch(client, Self.path(ofMeal: meal), token: account.accessToken)
            #expect(gone.status == 404)
            #expect(gone.json["error"]["code"].string == "NOT_FOUND")
        }
    }
}
