import Foundation
import JSON
import Outbox
import Queue
import Testing

/// `GET jobs/{id}`: a job's status, to its owner only; anyone else's job, an unknown id or a malformed one is
/// the same `NOT_FOUND`.
/// Serialized: every `TestAPI.run` opens Postgres connections of its own, and all cases at once exceed the
/// server's `max_connections` (100).
@Suite struct JobsTests {
    @Test func ownerSeesTheQueuedJob() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let before = Date()
            let id = try await enqueueLoginWebhook(api, owner: account.id)

            let result = try await client.call(.get, "jobs/\(id.rawValue)", token: account.accessToken)
            #expect(result.status == 200)
            #expect(result.json["success"].bool == true)
            #expect(result.data["id"].string == id.rawValue)
            #expect(result.data["type"].string == "login-webhook")
            #expect(result.data["status"].string == "queued")
            #expect(result.data["attempts"].int == 0)
            let enqueuedAt = try #require(result.data["enqueuedAt"].string.flatMap(parseISO))
            #expect(enqueuedAt >= before - 1 && enqueuedAt <= Date() + 1)
            #expect(!result.data["finishedAt"].exists || result.data["finishedAt"].isNull)
            #expect(!result.data["result"].exists || result.data["result"].isNull)

            // Ids are case-insensitive UUIDs.
            let upper = try await client.call(.get, "jobs/\(id.rawValue.uppercased())", token: account.accessToken)
            #expect(upper.status == 200)
            #expect(upper.data["id"].string == id.rawValue)
        }
    }

    /// A job accepted in Postgres whose enqueue has not happened yet (its request died after the commit, or Redis was
    /// away): queued to its owner, not found to anyone else, until the relay puts it on its queue.
    @Test func aJobStillInTheOutboxIsQueuedToItsOwnerOnly() async throws {
        try await TestAPI.run { api, client in
            let owner = try await api.register(client)
            let stranger = try await api.register(client)
            let outbox = JobOutbox(database: api.database, queue: api.queue)
            let job = JobOutbox.Job(kind: "noop", payload: ["sleepMs": 0], owner: owner.id)
            try await api.database.transaction { tx in try await outbox.add(job, in: tx) }
            let waiting = try await client.call(.get, "jobs/\(job.id.rawValue)", token: owner.accessToken)
            #expect(waiting.status == 200, "\(waiting.text)")
            #expect(waiting.data["status"].string == "queued")
            #expect(waiting.data["type"].string == "noop")
            #expect(waiting.data["attempts"].int == 0)
            #expect(try await client.call(.get, "jobs/\(job.id.rawValue)", token: stranger.accessToken).status == 404)
            #expect(try await outbox.relay(olderThan: .zero) == 1)
            let relayed = try await client.call(.get, "jobs/\(job.id.rawValue)", token: owner.accessToken)
            #expect(relayed.status == 200 && relayed.data["status"].string == "queued", "\(relayed.text)")
            #expect(try await api.queue.record(job.id)?.owner == owner.id)
        }
    }

    @Test func reportsTheJobsKind() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let enqueued = try await api.queue.enqueue("noop", payload: ["sleepMs": 0], options: EnqueueOptions(owner: account.id))
            let id = try #require(enqueued.id)
            let result = try await client.call(.get, "jobs/\(id.rawValue)", token: account.accessToken)
            #expect(result.status == 200)
            #expect(result.data["type"].string == "noop")
            #expect(result.data["status"].string == "queued")
        }
    }

    /// `DELETE jobs/{id}`: the owner cancels a waiting job (it never runs); anyone else gets the same 404 as for
    /// `GET`; a finished job is 409.
    @Test func theOwnerCancelsAWaitingJobAndNoOneElseCan() async throws {
        try await TestAPI.run { api, client in
            let owner = try await api.register(client)
            let stranger = try await api.register(client)
            let enqueued = try await api.queue.enqueue("noop", payload: ["sleepMs": 0], options: EnqueueOptions(owner: owner.id))
            let id = try #require(enqueued.id)
            let foreign = try await client.call(.delete, "jobs/\(id.rawValue)", token: stranger.accessToken)
            #expect(foreign.status == 404 && foreign.errorCode == "NOT_FOUND")
            #expect(try await api.queue.record(id)?.status == .queued)

            let cancelled = try await client.call(.delete, "jobs/\(id.rawValue)", token: owner.accessToken)
            #expect(cancelled.status == 200, "\(cancelled.text)")
            #expect(cancelled.data["id"].string == id.rawValue)
            #expect(cancelled.data["status"].string == "cancelled")
            #expect(cancelled.data["error"].string == "cancelled by an operator")
            let shown = try await client.call(.get, "jobs/\(id.rawValue)", token: owner.accessToken)
            #expect(shown.data["status"].string == "cancelled")

            let again = try await client.call(.delete, "jobs/\(id.rawValue)", token: owner.accessToken)
            #expect(again.status == 409 && again.errorCode == "JOB_FINISHED")
            #expect(again.json["error"]["details"]["status"].string == "cancelled")
            let unknown = try await client.call(.delete, "jobs/\(UUID().uuidString)", token: owner.accessToken)
            #expect(unknown.status == 404)
        }
    }

    @Test func anotherUsersJobIsNotFound() async throws {
        try await TestAPI.run { api, client in
            let owner = try await api.register(client)
            let stranger = try await api.register(client)
            let id = try await enqueueLoginWebhook(api, owner: owner.id)
            let result = try await client.call(.get, "jobs/\(id.rawValue)", token: stranger.accessToken)
            #expect(result.status == 404)
            #expect(result.errorCode == "NOT_FOUND")
            #expect(!result.data.exists)
            #expect(result.text.contains(id.rawValue) == false)
        }
    }

    @Test func jobWithoutAnOwnerIsNotFound() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let enqueued = try await api.queue.enqueue("noop", payload: [:])
            let id = try #require(enqueued.id)
            let result = try await client.call(.get, "jobs/\(id.rawValue)", token: account.accessToken)
            #expect(result.status == 404)
            #expect(result.errorCode == "NOT_FOUND")
        }
    }

    @Test(arguments: [UUID().uuidString.lowercased(), "abc", "00000000-0000-0000-0000-00000000000g", "1"])
    func unknownOrMalformedIdsAreNotFound(id: String) async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            // A job of the caller's exists, so "not found" is about the id, not an empty queue.
            _ = try await enqueueLoginWebhook(api, owner: account.id)
            let result = try await client.call(.get, "jobs/\(id)", token: account.accessToken)
            #expect(result.status == 404)
            #expect(result.errorCode == "NOT_FOUND")
            #expect(result.json["success"].bool == false)
        }
    }

    @Test func withoutATokenIsUnauthorized() async throws {
        try await TestAPI.run { api, client in
            let account = try await api.register(client)
            let id = try await enqueueLoginWebhook(api, owner: account.id)
            let missing = try await client.call(.get, "jobs/\(id.rawValue)")
            #expect(missing.status == 401)
            #expect(missing.errorCode == "UNAUTHORIZED")
            let garbage = try await client.call(.get, "jobs/\(id.rawValue)", token: "not-a-token")
            #expect(garbage.status == 401)
            #expect(garbage.errorCode == "UNAUTHORIZED")
        }
    }
}

// MARK: Helpers

/// A `login-webhook` job (payload schema in `jobs/login-webhook.yml`) owned by `owner`.
private func enqueueLoginWebhook(_ api: TestAPI, owner: String) async throws -> JobID {
    let payload: JSONValue = [
        "event": "signin", "eventId": .string(UUID().uuidString.lowercased()), "provider": "email",
        "provider_uid": .string(owner), "email": .null, "display_name": .null,
        "client_timestamp": .string(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))),
    ]
    let result = try await api.queue.enqueue("login-webhook", payload: payload, options: EnqueueOptions(owner: owner))
    guard let id = result.id else { throw TestFailure("login-webhook was not enqueued: \(result)") }
    return id
}

private func parseISO(_ text: String) -> Date? {
    try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
}
