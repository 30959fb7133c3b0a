import Foundation
import HTTPTypes
import JSON
import Postgres
import Push
import Queue
import ReadYourWrites
import Store
import TestSupport
import Testing
import Workers

/// A job's end reaches its owner once: the answer to a request that waited, the end of the event stream it followed,
/// or else a push (the worker's `PushTrigger`, the `push` kind, a local APNs peer).
@Suite struct PushOnCompletionTests {
    @Test func onlyTheChatNobodyWaitedForIsPushedOnce() async throws {
        let model = try await OpenAIServer.start(fallback: .json(ChatRoutesTests.answer))
        defer { model.stop() }
        let peer = try await APNsPeer.start()
        defer { peer.stop() }
        try await TestAPI.run(live: true) { api, client in
            let account = try await api.register(client)
            let token = String(repeating: "ab", count: 32)
            _ = try await Devices(api.database).register(
                token: token, userID: account.id, platform: "ios", deviceModel: "iPhone", osVersion: "18.1", appVersion: "2.0")
            let apns = try Self.client(of: peer)
            let (worker, task) = api.startWorker(
                queue: "ai", settings: WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test"), alsoServing: ["push"], push: apns,
                observers: [PushTrigger(queue: api.queue, logger: TestAPI.logger)])
            // 1. Answered within the short wait: the app has it.
            let answered = try await client.call(.post, "chat", token: account.accessToken, json: ["message": "Carbs in rice?"])
            #expect(answered.status == 200)
            // 2. Accepted (202) and left: the app went away.
            let prefer: HTTPFields = [.init("Prefer")!: "respond-async"]
            let left = try await client.call(.post, "chat", token: account.accessToken, json: ["message": "And pasta?"], headers: prefer)
            let leftID = try #require(left.data["jobId"].string)
            // 3. Accepted and followed on its event stream to the end.
            let followed = try await client.call(
                .post, "chat", token: account.accessToken, json: ["message": "And bread?"], headers: prefer)
            let followedID = try #require(followed.data["jobId"].string)
            let stream = try EventStreamClient(
                "http://127.0.0.1:\(client.port ?? 0)/api/mobile/v1/jobs/\(followedID)/events", token: account.accessToken)
            #expect(try await stream.waitForEnd())
            // Each ended chat enqueued one push job (2 s later); all three have run.
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    try await api.queue.stats().first { $0.queue == "push" }?.succeededTotal == 3
                })
            worker.stop()
            try await task.value
            let pushes = try peer.pushes()
            #expect(pushes.count == 1, "\(pushes.map(\.payload))")
            let payload = JSON(parsing: try #require(pushes.first?.payload))
            #expect(payload["jobId"].string == leftID && payload["kind"].string == "chat" && payload["status"].string == "succeeded")
            #expect(pushes.first?.token == token && pushes.first?.headers["apns-topic"] == peer.topic)
            // The push job of the followed chat found its end seen.
            let followedJob = try #require(JobID(rawValue: followedID))
            let skipped = try #require(try await api.queue.record(PushTrigger.pushID(of: followedJob)))
            #expect(JSON(parsing: skipped.result ?? "")["skipped"].string == "seen", "\(skipped.result ?? "-")")
        }
    }

    /// With read replicas a push marks its owner's write: the app, woken by it, reads the chat next from wherever its
    /// API process sends reads, and must find it although nothing asked the API for the job.
    @Test func aPushMarksItsOwnersWriteForReplicaReads() async throws {
        let model = try await OpenAIServer.start(fallback: .json(ChatRoutesTests.answer))
        defer { model.stop() }
        let peer = try await APNsPeer.start()
        defer { peer.stop() }
        try await TestAPI.run(live: true) { api, client in
            let account = try await api.register(client)
            _ = try await Devices(api.database).register(
                token: String(repeating: "cd", count: 32), userID: account.id, platform: "ios", deviceModel: "iPhone",
                osVersion: "18.1", appVersion: "2.0")
            let apns = try Self.client(of: peer)
            var settings = WorkerSettings(aiBaseURL: model.baseURL, aiAPIKey: "sk-test")
            settings.writeMarkLifetime = .seconds(30)
            let (worker, task) = api.startWorker(
                queue: "ai", settings: settings, alsoServing: ["push"], push: apns,
                observers: [PushTrigger(queue: api.queue, logger: TestAPI.logger)])
            let marks = WriteMarks(redis: api.queue.redis, prefix: api.queue.options.prefix, lifetime: .seconds(30))
            let prefer: HTTPFields = [.init("Prefer")!: "respond-async"]
            let accepted = try await client.call(.post, "chat", token: account.accessToken, json: ["message": "Rice?"], headers: prefer)
            #expect(accepted.status == 202)
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    try await api.queue.stats().first { $0.queue == "ai" }?.succeededTotal == 1
                })
            // The chat's rows are committed: the position now is at or past them. Nothing has marked the user yet.
            let written = try await PostgresLSN.current(on: api.database)
            #expect(try await marks.mark(of: account.id) == nil)
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    try await api.queue.stats().first { $0.queue == "push" }?.succeededTotal == 1
                })
            worker.stop()
            try await task.value
            #expect(try peer.pushes().count == 1)
            let mark = try #require(try await marks.mark(of: account.id), "the push marked no write")
            #expect(mark >= written)
        }
    }

    /// An APNs client of the local peer's.
    static func client(of peer: APNsPeer) throws -> APNsClient {
        let key = try PushSettings.signingKey(pem: String(contentsOfFile: peer.keyPath, encoding: .utf8))
        return APNsClient(
            settings: PushSettings(url: peer.url, topic: peer.topic, keyID: peer.keyID, teamID: peer.teamID, key: key, caFile: peer.caFile),
            logger: TestAPI.logger)
    }

    /// The push job's id is derived from the job's: the same for every end of one job (a redelivery enqueues no second
    /// push), distinct across jobs, and a valid UUID.
    @Test func aJobsPushHasOneIdPerJob() throws {
        let ids = (0..<1000).map { _ in JobID.random() }
        let pushes = ids.map(PushTrigger.pushID(of:))
        #expect(Set(pushes).count == 1000 && Set(pushes).isDisjoint(with: Set(ids)))
        #expect(ids.map(PushTrigger.pushID(of:)) == pushes)
        #expect(pushes.allSatisfy { JobID(rawValue: $0.rawValue) != nil && $0.rawValue.dropFirst(14).first == "4" })
    }
}
