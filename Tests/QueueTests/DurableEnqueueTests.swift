import Foundation
import JSON
import Queue
import Redis
import TestSupport
import Testing

/// `QueueOptions.durability`: an enqueue succeeds once a replica has the job, on each of the three write paths.
@Suite struct DurableEnqueueTests {
    @Test func aDurableEnqueueIsOnTheReplicaWhenItReturnsOrFails() async throws {
        let (master, replica) = try PrivateRedis.startWithReplica()
        defer {
            master.stop()
            replica.stop()
        }
        var options = QueueOptions()
        options.durability = Durability(replicas: 1, timeout: .seconds(2))
        let env = try TestEnvironment(options: options, redisURL: master.url)
        defer { env.redis.close() }
        let onReplica = try RedisClient(url: replica.url)
        defer { onReplica.close() }
        _ = try requireID(await env.queue.enqueue("noop", payload: .object([:])))
        let indexed = try requireID(await env.queue.enqueue("noop", payload: .object([:]), options: EnqueueOptions(indexed: true)))
        let unique = try requireID(await env.queue.enqueue("noop", payload: .object([:]), options: EnqueueOptions(uniqueKey: "u")))
        let bulk = try await env.queue.enqueue(
            Array(repeating: (kind: "noop", payload: JSONValue.object([:]), options: EnqueueOptions()), count: 50))
        #expect(bulk.allSatisfy { $0.id != nil })
        // On the replica as soon as the enqueues returned: the stream's entries, and the records written with them.
        #expect(try await onReplica.send("XLEN", env.queue.keys("default").stream) == .integer(53))
        for id in [indexed, unique] { #expect(try await onReplica.send("EXISTS", env.queue.keys("default").job(id)) == .integer(1)) }

        replica.stop()
        var impatient = options
        impatient.durability = Durability(replicas: 1, timeout: .milliseconds(300))
        let strict = JobQueue(redis: env.redis, catalog: env.queue.catalog, options: impatient)
        await #expect { try await strict.enqueue("noop", payload: .object([:])) } throws: { error in
            (error as? RedisError)?.code == .notReplicated
        }
        // Without durability the same enqueue succeeds: the master alone acknowledges it.
        let plainQueue = JobQueue(redis: env.redis, catalog: env.queue.catalog, options: QueueOptions(prefix: env.prefix))
        #expect(try await plainQueue.enqueue("noop", payload: .object([:])).id != nil)
    }
}
