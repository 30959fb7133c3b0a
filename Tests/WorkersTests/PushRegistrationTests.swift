import Foundation
import JSON
import Queue
import Store
import TestSupport
import Testing
import Workers

/// The `push-registration` kind on the real store, run by a real worker.
@Suite struct PushRegistrationTests {
    static let token = String(repeating: "ab12", count: 16)

    static func run(_ env: WorkerTestEnvironment, _ payload: JSONValue) async throws -> JobRecord {
        let id = try #require(try await env.queue.enqueue("push-registration", payload: payload).id)
        var record: JobRecord?
        _ = try await eventually {
            record = try await env.queue.record(id)
            return record?.status == .succeeded || record?.status == .failed
        }
        return try #require(record)
    }

    static func deviceCount(_ env: WorkerTestEnvironment, token: String) async throws -> Int {
        let rows = try await env.database.query("SELECT count(*)::int AS n FROM devices WHERE token = $1", [token])
        return try rows[rows.startIndex].decode("n")
    }

    @Test func oneRowPerTokenAndATokenMovesWithItsNewOwner() async throws {
        try await WorkerTestEnvironment.run { env in
            let alice = try await env.createUser()
            let bob = try await env.createUser()
            let (worker, task) = env.startWorker(settings: WorkerSettings(), queues: ["default"])
            defer { worker.stop() }
            let first = try await Self.run(
                env,
                [
                    "action": "register", "token": .string(Self.token), "platform": "ios", "userId": .string(alice.id),
                    "deviceModel": "iPhone 15 Pro",
                ])
            #expect(first.status == .succeeded, "\(first.error ?? "")")
            let deviceID = try #require(try first.result.map(JSONValue.init(parsing:))?["deviceId"])
            var row = try #require(try await Devices(env.database).find(token: Self.token))
            #expect(deviceID == .string(row.id.uuidString.lowercased()))
            #expect(row.userID == alice.id && row.platform == "ios" && row.deviceModel == "iPhone 15 Pro")

            // The phone changes hands: the same token, registered by Bob, is Bob's now, still one row, same id.
            let moved = try await Self.run(
                env,
                ["action": "register", "token": .string(Self.token), "platform": "ios", "userId": .string(bob.id), "osVersion": "18.1"])
            #expect(moved.status == .succeeded, "\(moved.error ?? "")")
            #expect(try moved.result.map(JSONValue.init(parsing:))?["deviceId"] == deviceID)
            row = try #require(try await Devices(env.database).find(token: Self.token))
            #expect(row.userID == bob.id && row.osVersion == "18.1" && row.deviceModel == nil)
            #expect(try await Self.deviceCount(env, token: Self.token) == 1)

            // Registered again without signing in: the device belongs to nobody (no pushes to Bob's account).
            _ = try await Self.run(env, ["action": "register", "token": .string(Self.token), "platform": "ios"])
            #expect(try await Devices(env.database).find(token: Self.token)?.userID == nil)
            #expect(try await Self.deviceCount(env, token: Self.token) == 1)
            worker.stop()
            try await task.value
        }
    }

    @Test func unregisterRemovesTheRowAndAnUnknownTokenStillSucceeds() async throws {
        try await WorkerTestEnvironment.run { env in
            let (worker, task) = env.startWorker(settings: WorkerSettings(), queues: ["default"])
            defer { worker.stop() }
            _ = try await Self.run(env, ["action": "register", "token": .string(Self.token), "platform": "android"])
            #expect(try await Self.deviceCount(env, token: Self.token) == 1)
            let removed = try await Self.run(env, ["action": "unregister", "token": .string(Self.token)])
            #expect(removed.status == .succeeded)
            #expect(try removed.result.map(JSONValue.init(parsing:)) == ["unregistered": true, "removed": true])
            #expect(try await Self.deviceCount(env, token: Self.token) == 0)
            let again = try await Self.run(env, ["action": "unregister", "token": .string(Self.token)])
            #expect(again.status == .succeeded)
            #expect(try again.result.map(JSONValue.init(parsing:)) == ["unregistered": true, "removed": false])
            worker.stop()
            try await task.value
        }
    }

    /// An account deleted before the job ran has nothing to attach the device to: dead at once, no row.
    @Test func aDeletedOwnerIsAPermanentFailure() async throws {
        try await WorkerTestEnvironment.run { env in
            let (worker, task) = env.startWorker(settings: WorkerSettings(), queues: ["default"])
            defer { worker.stop() }
            let record = try await Self.run(
                env, ["action": "register", "token": .string(Self.token), "platform": "ios", "userId": "deleted-user"])
            #expect(record.status == .failed)
            #expect(record.attempts == 1)
            #expect(record.error?.contains("no longer exists") == true, "\(record.error ?? "")")
            #expect(try await Self.deviceCount(env, token: Self.token) == 0)
            worker.stop()
            try await task.value
        }
    }
}
