import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OutboundHTTP
import Store
import Testing
import Workers

@testable import API

/// `devices/register` and `devices/unregister` (seed 001) through the real router, stored by a real worker.
@Suite struct DeviceRoutesTests {
    static let iosToken = String(repeating: "0f9e", count: 16)
    static let androidToken = "fcm-" + String(repeating: "AbC_1:xyZ-", count: 14)

    static func device(_ api: TestAPI, _ token: String) async throws -> Device? {
        try await Devices(api.database).find(token: token)
    }

    static func count(_ api: TestAPI) async throws -> Int {
        let rows = try await api.database.query("SELECT count(*)::int AS n FROM devices")
        return try rows[rows.startIndex].decode("n")
    }

    @Test func registerAnswersWithTheRowsIdAndATokenMovesToItsNewUser() async throws {
        try await TestAPI.run { api, client in
            let alice = try await api.register(client)
            let bob = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "default")
            defer { worker.stop() }
            let registered = try await client.call(
                .post, "devices/register", token: alice.accessToken,
                json: [
                    "deviceToken": Self.iosToken, "platform": "ios", "deviceModel": "iPhone 15 Pro", "osVersion": "17.0",
                    "appVersion": "1.0.0",
                ])
            #expect(registered.status == 200, "\(registered.text)")
            #expect(registered.data["registered"].bool == true)
            let row = try #require(try await Self.device(api, Self.iosToken))
            #expect(registered.data["deviceId"].string == row.id.uuidString.lowercased())
            #expect(row.userID == alice.id && row.platform == "ios" && row.appVersion == "1.0.0")

            let moved = try await client.call(
                .post, "devices/register", token: bob.accessToken, json: ["deviceToken": Self.iosToken, "platform": "ios"])
            #expect(moved.status == 200, "\(moved.text)")
            #expect(moved.data["deviceId"].string == row.id.uuidString.lowercased())
            #expect(try await Self.device(api, Self.iosToken)?.userID == bob.id)
            #expect(try await Self.count(api) == 1)

            // Without a token the device is stored for nobody.
            let anonymous = try await client.call(
                .post, "devices/register", json: ["deviceToken": Self.androidToken, "platform": "android"])
            #expect(anonymous.status == 200, "\(anonymous.text)")
            let android = try #require(try await Self.device(api, Self.androidToken))
            #expect(android.userID == nil && android.platform == "android")
            #expect(anonymous.data["deviceId"].string == android.id.uuidString.lowercased())
            worker.stop()
            try await task.value
        }
    }

    @Test func unregisterRemovesTheRowAndAnUnknownTokenIsFine() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let (worker, task) = api.startWorker(queue: "default")
            defer { worker.stop() }
            let registered = try await client.call(
                .post, "devices/register", token: account.accessToken, json: ["deviceToken": Self.iosToken, "platform": "ios"])
            #expect(registered.status == 200)
            #expect(try await Self.count(api) == 1)
            for _ in 0..<2 {
                let removed = try await client.call(
                    .post, "devices/unregister", token: account.accessToken, json: ["deviceToken": Self.iosToken])
                #expect(removed.status == 200, "\(removed.text)")
                #expect(removed.data["unregistered"].bool == true)
                #expect(try await Self.count(api) == 0)
            }
            worker.stop()
            try await task.value
        }
    }

    @Test func badInputIsRefusedBeforeAnythingIsQueued() async throws {
        try await TestAPI.run { api, client in
            let cases: [([String: Any], String)] = [
                (["deviceToken": Self.iosToken, "platform": "windows"], "platform"),
                (["deviceToken": Self.iosToken], "platform"),
                (["platform": "ios"], "deviceToken"),
                (["deviceToken": "apns_device_token_string", "platform": "ios"], "deviceToken"),
                (["deviceToken": String(repeating: "g", count: 64), "platform": "ios"], "deviceToken"),
                (["deviceToken": String(repeating: "a", count: 63), "platform": "ios"], "deviceToken"),
                (["deviceToken": String(repeating: "a", count: 201), "platform": "ios"], "deviceToken"),
                (["deviceToken": String(repeating: "a", count: 99), "platform": "android"], "deviceToken"),
                (["deviceToken": String(repeating: "a", count: 120) + "!", "platform": "android"], "deviceToken"),
                (["deviceToken": Self.iosToken, "platform": "ios", "deviceModel": String(repeating: "x", count: 101)], "deviceModel"),
                (["deviceToken": Self.iosToken, "platform": "ios", "appVersion": 3], "appVersion"),
                (["deviceToken": Self.iosToken, "platform": "ios", "pushEnabled": true], "pushEnabled"),
            ]
            for (body, field) in cases {
                let refused = try await client.call(.post, "devices/register", json: body)
                #expect(refused.status == 400, "\(body): \(refused.text)")
                #expect(refused.errorCode == "VALIDATION_ERROR")
                #expect(refused.json["error"]["details"]["field"].string == field, "\(body): \(refused.text)")
            }
            let unregister = try await client.call(.post, "devices/unregister", json: ["deviceToken": ""])
            #expect(unregister.status == 400 && unregister.json["error"]["details"]["field"].string == "deviceToken")
            // A token that is sent must be valid, even though none is required.
            let badToken = try await client.call(
                .post, "devices/register", token: "not-a-token", json: ["deviceToken": Self.iosToken, "platform": "ios"])
            #expect(badToken.status == 401 && badToken.errorCode == "UNAUTHORIZED")
            let stats = try await api.queue.stats()
            #expect(stats.reduce(0) { $0 + $1.queued } == 0)
        }
    }

    /// With no worker running the client is not kept waiting forever: 202 with the job to poll, at once when it
    /// asks (`Prefer: respond-async`), else when the wait runs out. The job does its work when a worker comes.
    @Test func withoutAWorkerTheAnswerIs202WithTheJob() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let async = try await client.call(
                .post, "devices/register", token: account.accessToken, json: ["deviceToken": Self.iosToken, "platform": "ios"],
                headers: [HTTPField.Name("Prefer")!: "respond-async"])
            #expect(async.status == 202, "\(async.text)")
            #expect(async.data["registered"].bool == false)
            #expect(async.data["status"].string == "queued")
            let jobID = try #require(async.data["jobId"].string)
            #expect(async.headers[.location] == "/api/mobile/v1/jobs/\(jobID)")
            let job = try await client.call(.get, "jobs/\(jobID)", token: account.accessToken)
            #expect(job.status == 200 && job.data["type"].string == "push-registration")
            // Without a token the job has no owner: the route still reads it right after the enqueue.
            let anonymous = try await client.call(
                .post, "devices/register", json: ["deviceToken": String(repeating: "ab", count: 32), "platform": "ios"],
                headers: [HTTPField.Name("Prefer")!: "respond-async"])
            #expect(anonymous.status == 202, "\(anonymous.text)")
            #expect(anonymous.data["status"].string == "queued")

            // The same routes with a short wait, as the API would answer when its worker pool is down.
            let router = Router(context: APIContext.self)
            router.add(middleware: ErrorEnvelopeMiddleware())
            DeviceRoutes(
                database: api.database, queue: api.queue, waiter: api.dependencies.waiter,
                authenticator: Authenticator(accounts: api.dependencies.accounts),
                idempotency: IdempotentRequests(database: api.database), wait: .milliseconds(300)
            ).register(on: RouteTable(router: router))
            let waited = try await Application(router: router).test(.router) { shortClient in
                try await shortClient.call(
                    .post, "devices/register", token: account.accessToken, json: ["deviceToken": Self.androidToken, "platform": "android"])
            }
            #expect(waited.status == 202, "\(waited.text)")
            #expect(waited.data["registered"].bool == false)
            let secondJob = try #require(waited.data["jobId"].string)
            #expect(waited.headers[.location] == "/api/mobile/v1/jobs/\(secondJob)")
            #expect(try await Self.count(api) == 0)

            let (worker, task) = api.startWorker(queue: "default")
            defer { worker.stop() }
            for (id, token) in [(jobID, Self.iosToken), (secondJob, Self.androidToken)] {
                let done = try await client.call(.get, "jobs/\(id)?wait=10", token: account.accessToken)
                #expect(done.data["status"].string == "succeeded", "\(done.text)")
                let row = try #require(try await Self.device(api, token))
                #expect(done.data["result"]["deviceId"].string == row.id.uuidString.lowercased())
                #expect(row.userID == account.id)
            }
            worker.stop()
            try await task.value
        }
    }
}
