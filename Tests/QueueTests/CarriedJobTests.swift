import Foundation
import Queue
import Redis
import TestSupport
import Testing

/// A plain job enqueued without `indexed` is one stream entry that carries it until a worker starts it and writes
/// its record; an indexed one (or one with an owner) has its record from the enqueue on.
@Suite struct CarriedJobTests {
    /// The fields of the queue's stream entries, oldest first.
    private func entries(_ env: TestEnvironment) async throws -> [[String: String]] {
        let reply = try await env.redis.send(["XRANGE", env.queue.keys("default").stream, "-", "+"])
        return (reply.array ?? []).map { entry in
            let flat = entry.array?[1].array?.compactMap(\.string) ?? []
            return Dictionary(uniqueKeysWithValues: stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0], flat[$0 + 1]) })
        }
    }

    private func recordExists(_ env: TestEnvironment, _ id: JobID) async throws -> Bool {
        try await env.redis.send(["EXISTS", env.queue.keys("default").job(id)]).int == 1
    }

    @Test func aPlainJobIsOneEntryUntilItStartsThenItsRecordIsWhole() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        try await env.queue.prepare(queues: ["default"])
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let id = try await env.enqueue(["meal": "toast"])
        let entry = try #require(try await entries(env).first)
        #expect(entry["id"] == id.rawValue)
        #expect(entry["kind"] == "noop")
        #expect(entry["payload"] == #"{"meal":"toast"}"#)
        #expect(entry["max"] == "3")
        #expect(entry["vis"] == "3000")
        #expect(entry.count == 5)
        #expect(try await recordExists(env, id) == false)
        // A request path never scans: without the search the job is unknown; an operator's search finds it.
        #expect(try await env.queue.record(id) == nil)
        let found = try #require(try await env.queue.record(id, searchingStreams: true))
        #expect(found.status == .queued)
        #expect(found.kind == "noop")
        #expect(found.payload == #"{"meal":"toast"}"#)
        #expect(found.maxAttempts == 3)
        // Its enqueue time is its entry id's (Redis's clock; this test's clock is the same machine's).
        let enqueued = Int64(found.enqueuedAt.timeIntervalSince1970 * 1000)
        #expect(enqueued >= before - 5 && enqueued <= Int64(Date().timeIntervalSince1970 * 1000) + 5)
        #expect(try await env.stats().queued == 1)

        let jobs = try await env.queue.reserve(queue: "default", count: 10, consumer: "w")
        #expect(jobs.map(\.id) == [id])
        #expect(jobs.first?.payload == #"{"meal":"toast"}"#)
        #expect(jobs.first?.attempt == 1)
        #expect(jobs.first?.maxAttempts == 3)
        let record = try #require(try await env.queue.record(id))
        #expect(record.status == .running)
        #expect(record.attempts == 1)
        #expect(record.worker == "w")
        #expect(record.payload == #"{"meal":"toast"}"#)
        #expect(record.enqueuedAt == found.enqueuedAt)
        #expect(jobs.first?.enqueuedAt == found.enqueuedAt)
        let vis = try await env.redis.send(["HGET", env.queue.keys("default").job(id), "vis"]).string
        #expect(vis == "3000")
    }

    /// The blocking read's path: the worker hands the start script the job its entry carries.
    @Test func theBlockingReadStartsACarriedJob() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        try await env.queue.prepare(queues: ["default"])
        let carried = try await env.enqueue(["n": 1])
        let indexed = try await env.enqueue(["n": 2], options: EnqueueOptions(indexed: true))
        let connections = FetchConnections(redis: env.redis, name: "test-blocking")
        defer { connections.close() }
        let jobs = try await env.queue.waitForJobs(
            queues: ["default"], count: 10, consumer: "w", timeout: .seconds(1), connections: connections)
        #expect(jobs.map(\.id) == [carried, indexed])
        #expect(jobs.map(\.payload) == [#"{"n":1}"#, #"{"n":2}"#])
        #expect(jobs.map(\.attempt) == [1, 1])
        #expect(jobs.map(\.maxAttempts) == [3, 3])
        for id in [carried, indexed] { #expect(try await env.status(id) == .running) }
    }

    @Test(arguments: [EnqueueOptions(indexed: true), EnqueueOptions(owner: "user-1")])
    func anIndexedOrOwnedJobHasItsRecordFromTheStart(options: EnqueueOptions) async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        let id = try await env.enqueue(["n": 1], options: options)
        #expect(try await entries(env) == [["id": id.rawValue]])
        let record = try #require(try await env.queue.record(id))
        #expect(record.status == .queued)
        #expect(record.payload == #"{"n":1}"#)
        #expect(record.owner == options.owner)
    }

    /// A retry goes back on the stream as an entry naming the job: its record, written at the first start, runs it.
    @Test func aCarriedJobRetriesFromItsRecord() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        try await env.queue.prepare(queues: ["default"])
        let id = try await env.enqueue(["n": 3])
        let first = try await env.queue.reserve(queue: "default", count: 1, consumer: "w")
        try await env.queue.record([.retry(try #require(first.first), error: "try again", after: .zero)])
        _ = try await env.queue.promoteDueJobs(queue: "default")
        let second = try await env.queue.reserve(queue: "default", count: 1, consumer: "w")
        #expect(second.map(\.id) == [id])
        #expect(second.first?.attempt == 2)
        #expect(second.first?.payload == #"{"n":3}"#)
        try await env.queue.record([.succeeded(try #require(second.first), result: "1", retention: .seconds(60))])
        let record = try #require(try await env.queue.record(id))
        #expect(record.status == .succeeded)
        #expect(record.errors.map(\.error) == ["try again"])
    }

    /// The operator's search reads the streams a page (1,000 entries) at a time.
    @Test func theSearchFindsAJobPastTheFirstPages() async throws {
        let env = try TestEnvironment()
        defer { Task { await env.cleanUp() } }
        try await env.enqueueNoops(2_500)
        let last = try await env.enqueue(["last": true])
        #expect(try await env.queue.record(last) == nil)
        #expect(try await env.queue.record(last, searchingStreams: true)?.payload == #"{"last":true}"#)
        #expect(try await env.queue.record(JobID.random(), searchingStreams: true) == nil)
    }
}
