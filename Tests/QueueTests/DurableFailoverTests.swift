import Foundation
import JSON
import Queue
import Redis
import Synchronization
import TestSupport
import Testing

/// A cluster master killed while its replica lags behind (frozen for a second, its link cut) and a producer enqueues one job after
/// another: with durable enqueue every enqueue that returned an id is on the promoted replica; without it, the jobs the
/// master acknowledged while its replica was frozen are lost with it. One case at a time: each runs a 6-node cluster.
@Suite(.serialized) struct DurableFailoverTests {
    @Test(arguments: [true, false]) func noAcknowledgedDurableEnqueueIsLostInAFailover(durable: Bool) async throws {
        let cluster = try PrivateCluster.start(masters: 3, replicas: 1)
        defer { cluster.stop() }
        let redis = try cluster.client()
        defer { redis.close() }
        var options = QueueOptions(prefix: "durable")
        options.durability = durable ? Durability(replicas: 1, timeout: .milliseconds(500)) : nil
        let catalog = JobCatalog(kinds: [JobKindSpec(name: "noop")])
        let queue = JobQueue(redis: redis, catalog: catalog, options: options)
        let stream = queue.keys("default").stream
        let victim = try #require(cluster.master(ofSlot: HashSlot.of(stream), askPort: cluster.nodes[0].port))
        // The replicas first finish their initial sync (until then a master's WAIT counts none of them, and a replica
        // that never synced cannot take over): a durable write on each master succeeds.
        let keys = (0..<60).map { "sync:\($0)" }
        let synced = try await eventually(timeout: .seconds(30)) {
            (try? await redis.pipeline(keys.map { ["SET", $0, "1"] }, durability: Durability(replicas: 1, timeout: .milliseconds(500))))
                != nil
        }
        try #require(synced, "the replicas never synced")
        let acknowledged = Mutex<[JobID]>([])
        let failures = Mutex(0)
        let stop = Atomic<Bool>(false)
        let producer = Task {
            while !stop.load(ordering: .relaxed) {
                do {
                    if let id = try await queue.enqueue("noop", payload: .object([:])).id { acknowledged.withLock { $0.append(id) } }
                    // A few hundred a second: enough to lose some, without taking a core from the rest of the suite.
                    try? await Task.sleep(for: .milliseconds(2))
                } catch {
                    failures.withLock { $0 += 1 }
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        let beforeKill = acknowledged.withLock { $0.count }
        let replica = try #require(cluster.replica(ofMasterAt: victim, askPort: cluster.nodes.first { $0.port != victim }!.port))
        // The replica falls behind: frozen, and its replication link cut (so no data waits in its socket either).
        replica.pause()
        _ = PrivateCluster.cli(victim, "CLIENT", "KILL", "TYPE", "replica")
        try await Task.sleep(for: .seconds(1))
        try #require(cluster.nodes.first { $0.port == victim }).stop()
        replica.resume()
        // Until the replica took over and the client reads the queue from it. (Durable enqueues stay refused after that:
        // the new master has no replica of its own to acknowledge them.)
        let tookOver = try await eventually(timeout: .seconds(30)) {
            (try? await redis.send(["XLEN", stream]))?.int != nil
        }
        stop.store(true, ordering: .relaxed)
        await producer.value
        #expect(tookOver, "the client never read the queue from the promoted replica")
        let ids = acknowledged.withLock { $0 }
        var stored = Set<String>()
        var from = "-"
        while true {
            let entries = try await redis.send(["XRANGE", stream, from, "+", "COUNT", "1000"]).array ?? []
            for entry in entries {
                let fields = entry.array?[1].array ?? []
                if let index = fields.firstIndex(of: .bulk("id")), index + 1 < fields.count, let id = fields[index + 1].string {
                    stored.insert(id)
                }
            }
            guard entries.count == 1000, let last = entries.last?.array?.first?.string else { break }
            from = "(" + last
        }
        let lost = ids.filter { !stored.contains($0.rawValue) }
        #expect(beforeKill > 0)
        if durable {
            #expect(lost.isEmpty, "\(lost.count) of \(ids.count) acknowledged enqueues lost (\(failures.withLock { $0 }) failed)")
        } else {
            // The fault is real: what the master acknowledged while its replica was frozen did not survive it.
            #expect(!lost.isEmpty, "no acknowledged enqueue lost without WAIT: the replica did not lag")
        }
    }
}
