import Foundation
import JSON
import Logging
import Push
import Queue
import Store
import TestSupport
import Testing
import Workers

/// The `push` kind on the real store and Redis against a local APNs peer (HTTP/2 + TLS, provider tokens verified with
/// the key's public half, Apple's answers): one push per iOS device per job, however often the job runs.
@Suite struct PushJobTests {
    /// A user with devices, the peer, and the handler as a worker process has it.
    struct Fixture {
        let env: WorkerTestEnvironment
        let peer: APNsPeer
        let handler: JobRegistry.Handler
        /// The handlers as a worker process has them, APNs included.
        let registry: JobRegistry
        let user: User
        /// The user's iOS devices' tokens, in registration order.
        let tokens: [String]
        /// A token of the user's Android device, and one of another user's iPhone: never pushed.
        let others: [String]

        static func token(_ n: Int) -> String { String(format: "%064x", n) }

        static func make(
            _ env: WorkerTestEnvironment, _ peer: APNsPeer, iPhones: Int = 2, keyPath: String? = nil, url: String? = nil,
            push configured: Bool = true, fcm: FCMPeer? = nil, logger: Logger? = nil
        ) async throws -> Fixture {
            let user = try await env.createUser()
            let stranger = try await env.createUser()
            let devices = Devices(env.database)
            var tokens: [String] = []
            for n in 1...iPhones {
                _ = try await devices.register(
                    token: token(n), userID: user.id, platform: "ios", deviceModel: "iPhone", osVersion: "18.1", appVersion: "2.0")
                tokens.append(token(n))
            }
            _ = try await devices.register(
                token: "android-\(user.id)", userID: user.id, platform: "android", deviceModel: nil, osVersion: nil, appVersion: nil)
            _ = try await devices.register(
                token: token(99), userID: stranger.id, platform: "ios", deviceModel: nil, osVersion: nil, appVersion: nil)
            var services = env.services(WorkerSettings())
            if let logger { services.logger = logger }
            if configured {
                let key = try PushSettings.signingKey(pem: String(contentsOfFile: keyPath ?? peer.keyPath, encoding: .utf8))
                services.push = APNsClient(
                    settings: PushSettings(
                        url: url ?? peer.url, topic: peer.topic, keyID: peer.keyID, teamID: peer.teamID, key: key, caFile: peer.caFile),
                    logger: services.logger)
            }
            if let fcm {
                let account = try String(contentsOfFile: fcm.serviceAccountFile, encoding: .utf8)
                services.fcm = FCMClient(
                    settings: try FCMSettings(serviceAccount: account, url: fcm.url, caFile: fcm.caFile), logger: services.logger)
            }
            let registry = Handlers.registry(services: services)
            let handler = try #require(registry.handler(for: PushJob.name))
            return Fixture(
                env: env, peer: peer, handler: handler, registry: registry, user: user, tokens: tokens,
                others: ["android-\(user.id)", token(99)])
        }

        func payload(_ jobID: JobID, kind: String = "analysis", status: String = "succeeded") -> String {
            let payload: JSONValue = [
                "jobId": .string(jobID.rawValue), "queue": "ai", "kind": .string(kind), "userId": .string(user.id),
                "status": .string(status),
            ]
            return payload.jsonString
        }

        /// Runs attempt `attempt` of the push about `jobID`; its result as JSON.
        func run(_ jobID: JobID, attempt: Int = 1, kind: String = "analysis", status: String = "succeeded") async throws -> JSONValue? {
            let context = JobContext(id: .random(), kind: PushJob.name, attempt: attempt, maxAttempts: 5)
            return try await handler(payload(jobID, kind: kind, status: status), context).map(JSONValue.init(parsing:))
        }

        func pushed(_ token: String) throws -> Int { try peer.pushes().filter { $0.token == token }.count }

        func deviceExists(_ token: String) async throws -> Bool { try await Devices(env.database).find(token: token) != nil }
    }

    static func withFixture(
        iPhones: Int = 2, keyPath: String? = nil, url: String? = nil, push: Bool = true, logger: Logger? = nil,
        _ body: @Sendable @escaping (Fixture) async throws -> Void
    ) async throws {
        let peer = try await APNsPeer.start()
        defer { peer.stop() }
        try await WorkerTestEnvironment.run { env in
            try await body(try await Fixture.make(env, peer, iPhones: iPhones, keyPath: keyPath, url: url, push: push, logger: logger))
        }
    }

    @Test func eachIOSDeviceGetsOnePushNamingTheJobAndARedeliveryNone() async throws {
        try await Self.withFixture { fixture in
            let job = JobID.random()
            #expect(try await fixture.run(job) == ["sent": 2])
            #expect(try fixture.pushed(fixture.tokens[0]) == 1 && fixture.pushed(fixture.tokens[1]) == 1)
            #expect(try fixture.peer.requests().allSatisfy { !fixture.others.contains($0.token) }, "an Android or a stranger's device")
            let push = try #require(try fixture.peer.pushes().first)
            #expect(push.headers["apns-collapse-id"] == job.rawValue && push.http == "2")
            let payload = try JSONValue(parsing: try #require(push.payload))
            #expect(payload["jobId"] == .string(job.rawValue) && payload["kind"] == "analysis" && payload["status"] == "succeeded")
            #expect(payload["aps"]?["alert"]?["title"] == "Your meal is analysed")

            // The same job delivered again (a worker died after sending): no device is pushed twice.
            #expect(try await fixture.run(job, attempt: 2) == ["sent": 0])
            #expect(try fixture.peer.requests().count == 2)
            // Each claim keeps APNs' id of its push, to trace it with Apple.
            let claims = try await fixture.env.database.query(
                "SELECT message_id FROM push_deliveries WHERE job_id = $1", [UUID(uuidString: job.rawValue)])
            let traced = try Set(claims.map { row -> String? in try row.decode("message_id") })
            #expect(try traced == Set(fixture.peer.pushes().map { Optional($0.apnsId) }))

            // Another job (a chat that failed) is pushed again, with its own words.
            #expect(try await fixture.run(.random(), kind: "chat", status: "failed") == ["sent": 2])
            let chat = try JSONValue(parsing: try #require(try fixture.peer.pushes().last?.payload))
            #expect(chat["aps"]?["alert"]?["title"] == "Your question could not be answered" && chat["kind"] == "chat")
        }
    }

    @Test func aResultTheAppHasSeenIsNotPushed() async throws {
        try await Self.withFixture { fixture in
            let job = JobID.random()
            _ = try await fixture.env.redis.send([
                "SET", QueueKeys(prefix: fixture.env.prefix, queue: "ai").resultSeen(job), "1", "EX", "3600",
            ])
            #expect(try await fixture.run(job) == ["sent": 0, "skipped": "seen"])
            #expect(try fixture.peer.requests().isEmpty)
            // The mark of another queue's job with the same id does not count.
            let other = JobID.random()
            _ = try await fixture.env.redis.send(["SET", QueueKeys(prefix: fixture.env.prefix, queue: "ai#1").resultSeen(other), "1"])
            #expect(try await fixture.run(other) == ["sent": 2])
        }
    }

    @Test func withoutAPNsSettingsNothingIsSent() async throws {
        try await Self.withFixture(push: false) { fixture throws in
            let result = try await fixture.run(.random())
            #expect(result == ["sent": 0, "skipped": "not configured"])
            #expect(try fixture.peer.requests().isEmpty)
        }
    }

    /// 410 Unregistered: the device is deleted (and never tried again); the others are pushed.
    @Test func anUnregisteredDeviceIsDeleted() async throws {
        try await Self.withFixture { fixture in
            try fixture.peer.answer(fixture.tokens[0], with: [.unregistered])
            let job = JobID.random()
            #expect(try await fixture.run(job) == ["sent": 1, "unregistered": 1])
            #expect(try await !fixture.deviceExists(fixture.tokens[0]))
            #expect(try await fixture.deviceExists(fixture.tokens[1]))
            #expect(try await fixture.run(job, attempt: 2) == ["sent": 0])
            #expect(try await fixture.run(.random()) == ["sent": 1])
            #expect(try fixture.peer.requests().filter { $0.token == fixture.tokens[0] }.count == 1)
        }
    }

    /// A refusal for good (400 DeviceTokenNotForTopic, a token of another app): not sent again, the device kept.
    @Test func aRefusedPushIsNotRetried() async throws {
        try await Self.withFixture { fixture in
            try fixture.peer.answer(fixture.tokens[1], with: [APNsPeer.Answer(400, "DeviceTokenNotForTopic")])
            let job = JobID.random()
            #expect(try await fixture.run(job) == ["sent": 1, "refused": 1])
            #expect(try await fixture.run(job, attempt: 2) == ["sent": 0])
            #expect(try fixture.peer.requests().count == 2)
            #expect(try await fixture.deviceExists(fixture.tokens[1]))
        }
    }

    /// A stored token no URL can carry (the client refuses it before sending): final for that device, counted as
    /// refused, the others pushed, and the job not retried for it.
    @Test func aTokenNoURLCanCarryIsRefusedForThatDeviceAlone() async throws {
        try await Self.withFixture { fixture in
            _ = try await Devices(fixture.env.database).register(
                token: "not a\ntoken", userID: fixture.user.id, platform: "ios", deviceModel: nil, osVersion: nil, appVersion: nil)
            let job = JobID.random()
            #expect(try await fixture.run(job) == ["sent": 2, "refused": 1])
            #expect(try await fixture.run(job, attempt: 2) == ["sent": 0])
            #expect(try fixture.peer.requests().count == 2)
        }
    }

    /// 429 and 503: the job is retried (after APNs' Retry-After at least), and the retry pushes only the devices
    /// that were not pushed.
    @Test func aThrottledDeviceIsTriedAgainAloneOnTheNextAttempt() async throws {
        try await Self.withFixture(iPhones: 3) { fixture in
            try fixture.peer.answer(fixture.tokens[0], with: [APNsPeer.Answer(429, "TooManyRequests", retryAfter: 3)])
            try fixture.peer.answer(fixture.tokens[2], with: [.serviceUnavailable])
            let job = JobID.random()
            do {
                _ = try await fixture.run(job)
                Issue.record("a throttled push was taken as sent")
            } catch let failure as JobFailure {
                #expect(failure.kind == .retryable && failure.retryAfter == .seconds(3), "\(failure.message)")
                #expect(failure.message.contains("2 device(s)") && failure.message.contains("429 TooManyRequests"), "\(failure.message)")
            }
            #expect(try fixture.pushed(fixture.tokens[1]) == 1 && fixture.peer.pushes().count == 1)
            #expect(try await fixture.run(job, attempt: 2) == ["sent": 2])
            #expect(try fixture.tokens.map(fixture.pushed) == [1, 1, 1])
            #expect(try fixture.peer.requests().count == 5)
        }
    }

    /// APNs not reachable (nothing listens): the claims are given back and the job retried; the next attempt sends.
    @Test func anUnreachableAPNsIsRetried() async throws {
        let closed = "https://localhost:\(PrivateRedis.freeLoopbackPort())"
        let peer = try await APNsPeer.start()
        defer { peer.stop() }
        try await WorkerTestEnvironment.run { env in
            let down = try await Fixture.make(env, peer, url: closed)
            let job = JobID.random()
            do {
                _ = try await down.run(job)
                Issue.record("a push to an unreachable APNs was taken as sent")
            } catch let failure as JobFailure {
                #expect(failure.kind == .retryable && failure.message.contains("unreachable"), "\(failure.message)")
            }
            let claims = try await env.database.query("SELECT 1 FROM push_deliveries WHERE job_id = $1", [UUID(uuidString: job.rawValue)])
            #expect(claims.isEmpty, "claims kept for pushes that never left")
        }
    }

    /// A key APNs does not know (403 InvalidProviderToken): every job dies at once, and the process says so once,
    /// not once per job, never showing the token or the key.
    @Test func aRefusedProviderTokenFailsJobsAndIsLoggedOnce() async throws {
        let logs = CapturedLogs()
        let otherKey = FileManager.default.temporaryDirectory.appendingPathComponent("other-\(UUID().uuidString).p8").path
        defer { try? FileManager.default.removeItem(atPath: otherKey) }
        try await APNsPeer.makeKey(at: otherKey)
        try await Self.withFixture(keyPath: otherKey, logger: logs.logger()) { fixture in
            for _ in 0..<2 {
                do {
                    _ = try await fixture.run(.random())
                    Issue.record("a refused provider token was taken as sent")
                } catch let failure as JobFailure {
                    #expect(failure.kind == .permanent && failure.message.contains("403 InvalidProviderToken"), "\(failure.message)")
                }
            }
            let said = logs.all.filter { $0.contains("provider token") }
            #expect(said.count == 1, "\(logs.all)")
            #expect(said.first?.contains("InvalidProviderToken") == true)
            let request = try #require(try fixture.peer.requests().first)
            let jwt = String(try #require(request.headers["authorization"]).dropFirst("bearer ".count))
            let key = try String(contentsOfFile: otherKey, encoding: .utf8)
            let secretLine = try #require(key.split(separator: "\n").dropFirst().first)
            #expect(!logs.all.contains { $0.contains(jwt) || $0.contains(secretLine) })
            #expect(try fixture.peer.pushes().isEmpty)
        }
    }

    /// The hourly `photo-retention` run deletes claims older than a week: the table stays as small as a week of pushes.
    @Test func claimsOlderThanAWeekAreDeletedByTheRetentionRun() async throws {
        try await Self.withFixture { fixture in
            let old = JobID.random()
            let recent = JobID.random()
            #expect(try await fixture.run(old) == ["sent": 2])
            #expect(try await fixture.run(recent) == ["sent": 2])
            _ = try await fixture.env.database.execute(
                "UPDATE push_deliveries SET claimed_at = now() - interval '8 days' WHERE job_id = $1", [UUID(uuidString: old.rawValue)])
            let retention = try #require(
                Handlers.registry(services: fixture.env.services(WorkerSettings())).handler(for: PhotoRetentionJob.name))
            _ = try await retention("{}", JobContext(id: .random(), kind: PhotoRetentionJob.name, attempt: 1, maxAttempts: 5))
            let left = try await fixture.env.database.query("SELECT DISTINCT job_id FROM push_deliveries")
            #expect(try left.map { row -> UUID in try row.decode("job_id") } == [UUID(uuidString: recent.rawValue)!])
        }
    }

    /// Through the queue: a `push` job enqueued with the id the trigger gives it runs on a worker serving the `push`
    /// queue alone, and its result says what was sent; the same id enqueued again is the same job, nothing more sent.
    @Test func aPushJobRunsOnThePushQueue() async throws {
        try await Self.withFixture { fixture in
            let env = fixture.env
            let options = WorkerOptions(
                queues: [("push", 1)], concurrency: 4, gracePeriod: .seconds(2), blockTimeout: .seconds(1),
                promoteInterval: .milliseconds(100), reclaimInterval: .milliseconds(200))
            let worker = Worker(queue: env.queue, registry: fixture.registry, options: options, logger: WorkerTestEnvironment.logger)
            let running = Task { try await worker.run() }
            defer { worker.stop() }
            #expect(env.queue.catalog[PushJob.name]?.queue == "push")
            let about = JobID.random()
            let payload = try JSONValue(parsing: fixture.payload(about))
            let id = try #require(JobID(rawValue: UUID().uuidString))
            for _ in 0..<2 {
                _ = try await env.queue.enqueue(PushJob.name, payload: payload, options: EnqueueOptions(delay: .milliseconds(300), id: id))
            }
            var record: JobRecord?
            _ = try await eventually {
                record = try await env.queue.record(id)
                return record?.status == .succeeded || record?.status == .failed
            }
            #expect(record?.status == .succeeded, "\(record?.error ?? "")")
            #expect(try record?.result.map(JSONValue.init(parsing:)) == ["sent": 2])
            #expect(try fixture.peer.pushes().count == 2)
            worker.stop()
            try await running.value
        }
    }

    /// With FCM configured, Android devices are pushed too (once per job, through the service account's access
    /// token), and FCM's `UNREGISTERED` deletes the device; the iPhones still go through APNs.
    @Test func androidDevicesArePushedThroughFCMOnce() async throws {
        let fcm = try await FCMPeer.start()
        defer { fcm.stop() }
        let peer = try await APNsPeer.start()
        defer { peer.stop() }
        try await WorkerTestEnvironment.run { env in
            let fixture = try await Fixture.make(env, peer, fcm: fcm)
            let gone = "android-gone-\(fixture.user.id)"
            _ = try await Devices(env.database).register(
                token: gone, userID: fixture.user.id, platform: "android", deviceModel: "Pixel", osVersion: "15", appVersion: "2.0")
            try fcm.answer(gone, with: [.unregistered])
            let job = JobID.random()
            #expect(try await fixture.run(job, kind: "chat") == ["sent": 3, "unregistered": 1])
            #expect(try peer.pushes().count == 2)
            let message = try JSONValue(parsing: try #require(try fcm.messages().first))
            #expect(message["token"] == .string("android-\(fixture.user.id)") && message["data"]?["jobId"] == .string(job.rawValue))
            #expect(message["notification"]?["title"] == "CarbScan answered")
            #expect(try await !fixture.deviceExists(gone))
            #expect(try await fixture.run(job, attempt: 2) == ["sent": 0])
            #expect(try fcm.requests().filter { $0.path != "/token" }.count == 2)
            #expect(try fcm.requests().filter { $0.path == "/token" }.count == 1)
        }
    }

    /// A service account Google refuses: Android pushes kill the job at once, said once per process.
    @Test func aRefusedServiceAccountFailsJobsAndIsLoggedOnce() async throws {
        let logs = CapturedLogs()
        let fcm = try await FCMPeer.start()
        defer { fcm.stop() }
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("other-\(UUID().uuidString).pem").path
        defer { try? FileManager.default.removeItem(atPath: other) }
        try await FCMPeer.makeKey(at: other)
        try fcm.writeServiceAccount(keyPath: other, to: fcm.serviceAccountFile)
        let peer = try await APNsPeer.start()
        defer { peer.stop() }
        try await WorkerTestEnvironment.run { env in
            let fixture = try await Fixture.make(env, peer, push: false, fcm: fcm, logger: logs.logger())
            for _ in 0..<2 {
                do {
                    _ = try await fixture.run(.random())
                    Issue.record("a refused service account was taken as sent")
                } catch let failure as JobFailure {
                    #expect(failure.kind == .permanent && failure.message.contains("invalid_grant"), "\(failure.message)")
                }
            }
            #expect(logs.all.filter { $0.contains("service account") }.count == 1, "\(logs.all)")
            #expect(try fcm.messages().isEmpty)
        }
    }

    /// Google's token endpoint unreachable: the Android device is not claimed, the job is retried, the iPhones pushed.
    @Test func anUnreachableTokenEndpointIsRetried() async throws {
        let fcm = try await FCMPeer.start()
        defer { fcm.stop() }
        let peer = try await APNsPeer.start()
        defer { peer.stop() }
        let closed = "https://localhost:\(PrivateRedis.freeLoopbackPort())/token"
        let account = try String(contentsOfFile: fcm.serviceAccountFile, encoding: .utf8)
            .replacingOccurrences(of: "\(fcm.url)/token".replacingOccurrences(of: "/", with: "\\/"), with: closed)
            .replacingOccurrences(of: "\(fcm.url)/token", with: closed)
        try account.write(toFile: fcm.serviceAccountFile, atomically: true, encoding: .utf8)
        try await WorkerTestEnvironment.run { env in
            let fixture = try await Fixture.make(env, peer, fcm: fcm)
            let job = JobID.random()
            do {
                _ = try await fixture.run(job)
                Issue.record("an unreachable token endpoint was taken as sent")
            } catch let failure as JobFailure {
                #expect(failure.kind == .retryable && failure.message.contains("token endpoint is unreachable"), "\(failure.message)")
            }
            #expect(try peer.pushes().count == 2 && fcm.requests().isEmpty)
            let android = try #require(try await Devices(env.database).find(token: "android-\(fixture.user.id)"))
            #expect(try await !PushDeliveries(env.database).isClaimed(jobID: UUID(uuidString: job.rawValue)!, deviceID: android.id))
        }
    }

    /// One provider's refused credentials do not hold up the other's devices: with a key APNs does not know, the
    /// Android device is still pushed through FCM, then the job dies naming APNs (and a redelivery sends nothing more).
    @Test func aMisconfiguredProviderDoesNotStopTheOther() async throws {
        let fcm = try await FCMPeer.start()
        defer { fcm.stop() }
        let peer = try await APNsPeer.start()
        defer { peer.stop() }
        let otherKey = FileManager.default.temporaryDirectory.appendingPathComponent("other-\(UUID().uuidString).p8").path
        defer { try? FileManager.default.removeItem(atPath: otherKey) }
        try await APNsPeer.makeKey(at: otherKey)
        try await WorkerTestEnvironment.run { env in
            let fixture = try await Fixture.make(env, peer, keyPath: otherKey, fcm: fcm)
            let job = JobID.random()
            for attempt in 1...2 {
                do {
                    _ = try await fixture.run(job, attempt: attempt)
                    Issue.record("a refused provider token was taken as sent")
                } catch let failure as JobFailure {
                    #expect(failure.kind == .permanent && failure.message.contains("APNs refused the provider token"), "\(failure.message)")
                }
            }
            #expect(try fcm.messages().count == 1, "the Android device was not pushed, or pushed twice")
            #expect(try peer.pushes().isEmpty && peer.requests().count == 2)
        }
    }
}
