import Foundation
import JSON
import JobContracts
import Queue
import Redis
import TestSupport
import Testing

/// A worker whose queues live on different masters of a Redis Cluster: one queue's keys share its `{queue}` tag (one
/// slot), so three queues can sit on three nodes, and no single command may read them all.
@Suite struct ClusterQueueTests {
    /// The port of the master serving each slot.
    static func masterPorts() async throws -> (Int) -> Int? {
        let seed = try RedisConfiguration(url: TestServices.clusterURL)
        var configuration = RedisConfiguration(host: seed.host, port: seed.port)
        configuration.followsCluster = false
        let node = RedisClient(configuration: configuration)
        defer { node.close() }
        var owners: [(ClosedRange<Int>, Int)] = []
        for range in try await node.send("CLUSTER", "SLOTS").array ?? [] {
            guard let fields = range.array, let start = fields[0].int, let end = fields[1].int, let port = fields[2].array?[1].int
            else { continue }
            owners.append((start...end, port))
        }
        return { slot in owners.first { $0.0.contains(slot) }?.1 }
    }

    /// Three queue names whose slots three different masters serve (a queue's slot is its name's: `{name}`).
    static func queuesOnThreeMasters() async throws -> [String] {
        let master = try await masterPorts()
        var byMaster: [Int: String] = [:]
        for n in 0..<1000 where byMaster.count < 3 {
            let name = "q\(n)"
            if let port = master(HashSlot.of(name)), byMaster[port] == nil { byMaster[port] = name }
        }
        return byMaster.values.sorted()
    }

    /// Kinds `noop-a`, `noop-b`, `noop-c`, one in each of `queues`.
    static func kinds(_ queues: [String]) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: zip(kindNames, queues).map {
                ($0, TestEnvironment.noop.replacingOccurrences(of: "queue: default", with: "queue: \($1)"))
            })
    }

    static let kindNames = ["noop-a", "noop-b", "noop-c"]

    enum NoopA: JobContract {
        static let name = "noop-a"
        typealias Parameters = NoopContract.Parameters
        typealias Result = JSONValue
    }
    enum NoopB: JobContract {
        static let name = "noop-b"
        typealias Parameters = NoopContract.Parameters
        typealias Result = JSONValue
    }
    enum NoopC: JobContract {
        static let name = "noop-c"
        typealias Parameters = NoopContract.Parameters
        typealias Result = JSONValue
    }
    struct Noop<C: JobContract>: JobKind where C.Parameters == NoopContract.Parameters {
        typealias Contract = C
        func run(_ parameters: Parameters, context: JobContext) async throws -> C.Result? { nil }
    }

    /// A worker serving the three queues with the three kinds.
    static func worker(_ env: TestEnvironment, queues: [String], concurrency: Int, blockTimeout: Duration) -> (
        Worker, Task<Void, any Error>
    ) {
        var registry = JobRegistry()
        registry.register(Noop<NoopA>())
        registry.register(Noop<NoopB>())
        registry.register(Noop<NoopC>())
        let worker = Worker(
            queue: env.queue, registry: registry,
            options: WorkerOptions(
                queues: queues.map { ($0, 1) }, concurrency: concurrency, blockTimeout: blockTimeout,
                promoteInterval: .milliseconds(100), reclaimInterval: .milliseconds(200)),
            logger: env.logger)
        return (worker, Task { try await worker.run() })
    }

    /// Counts are read from each queue's node: `jobs stats` on a cluster printed zeros for every queue.
    @Test func statsCountEveryQueueOnItsNode() async throws {
        let queues = try await Self.queuesOnThreeMasters()
        let env = try TestEnvironment(kinds: Self.kinds(queues), redisURL: TestServices.clusterURL)
        defer { Task { await env.cleanUp() } }
        for (n, kind) in Self.kindNames.enumerated() {
            for _ in 0...n { _ = try await env.enqueue(kind: kind) }
        }
        let stats = try await env.queue.stats()
        #expect(queues.map { queue in stats.first { $0.queue == queue }?.queued } == [1, 2, 3])
    }

    /// An idle worker waits on the three queues' nodes at once (a read each), and a job in any of them wakes it:
    /// with a 30 s block, a job picked up by the poll timer would wait for it.
    @Test func anIdleWorkerIsWokenByAJobOnAnyMaster() async throws {
        let queues = try await Self.queuesOnThreeMasters()
        let env = try TestEnvironment(kinds: Self.kinds(queues), redisURL: TestServices.clusterURL)
        defer { Task { await env.cleanUp() } }
        let (worker, task) = Self.worker(env, queues: queues, concurrency: 10, blockTimeout: .seconds(30))
        for kind in Self.kindNames + Self.kindNames.reversed() {
            try await Task.sleep(for: .milliseconds(300))
            let id = try await env.enqueue(kind: kind)
            #expect(try await eventually(timeout: .seconds(10)) { try await env.status(id) == .succeeded }, "\(kind)")
        }
        // The stop unblocks the three reads on their nodes: the worker ends well before the 30 s block.
        let stopping = ContinuousClock.now
        worker.requestStop()
        try await task.value
        #expect(ContinuousClock.now - stopping < .seconds(15))
    }

    /// A stop that comes while the reads are being sent still ends them all. The stop's one unblock missed a read not
    /// yet blocked on its node (still connecting, on a worker's first round), which then waited out its 30 s block: CI
    /// of 2026-12-07, and here 4 of these 60 workers, those stopped 5–7 ms after their start. The unblock is now sent
    /// again until the fetch returned. Workers stopped at every 0.5 ms of their first 30.
    @Test func aStopEndsEveryReadWhenItComes() async throws {
        let queues = try await Self.queuesOnThreeMasters()
        let env = try TestEnvironment(kinds: Self.kinds(queues), redisURL: TestServices.clusterURL)
        defer { Task { await env.cleanUp() } }
        var slow: [Int: Duration] = [:]
        for n in 0..<60 {
            let (worker, task) = Self.worker(env, queues: queues, concurrency: 1, blockTimeout: .seconds(30))
            try await Task.sleep(for: .microseconds(500 * n))
            let stopping = ContinuousClock.now
            worker.requestStop()
            try await task.value
            if ContinuousClock.now - stopping > .seconds(10) { slow[n * 500] = ContinuousClock.now - stopping }
        }
        #expect(slow.isEmpty, "stopped at µs after the start, and how long the stop took: \(slow)")
    }

    /// Many jobs over the three queues at once, with a worker whose concurrency is smaller than the work: every job
    /// runs once, and what a read delivered past the free slots goes back to its stream.
    @Test func everyJobOfEveryQueueRunsOnce() async throws {
        let queues = try await Self.queuesOnThreeMasters()
        let env = try TestEnvironment(kinds: Self.kinds(queues), redisURL: TestServices.clusterURL)
        defer { Task { await env.cleanUp() } }
        let (worker, task) = Self.worker(env, queues: queues, concurrency: 4, blockTimeout: .seconds(1))
        var ids: [JobID] = []
        for round in 0..<20 {
            for kind in Self.kindNames { ids.append(try await env.enqueue(["sleepMs": .int(round % 3)], kind: kind)) }
        }
        #expect(
            try await eventually(timeout: .seconds(30)) {
                let stats = try await env.queue.stats().filter { queues.contains($0.queue) }
                return stats.map(\.succeededTotal).reduce(0, +) == ids.count
            })
        for id in ids { #expect(try await env.status(id) == .succeeded) }
        let stats = try await env.queue.stats().filter { queues.contains($0.queue) }
        #expect(stats.map(\.failedTotal) == [0, 0, 0])
        #expect(stats.map(\.queued) == [0, 0, 0])
        worker.stop()
        try await task.value
    }
}
