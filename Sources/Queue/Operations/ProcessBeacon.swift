import Foundation
import Logging
import Redis
import ServiceLifecycle
import Synchronization

/// Keeps a process in the registry: every `interval` it writes its hash (host, pid, version, queues, concurrency,
/// busy slots, counts since start, state), its busy jobs and the history counted since the last beat, in one
/// pipeline, each with a time to live of two beats; once a second it reads its signals and the paused queues (one
/// pipeline of two commands). Nothing per job. Run it in the process's `ServiceGroup` before the worker, so it beats
/// (as `stopping`) while the worker drains; it leaves the registry when it stops. A `stop` signal stops the worker
/// as SIGTERM does: give the worker `successTerminationBehavior: .gracefullyShutdownGroup` so the group then ends.
public final class ProcessBeacon: Service {
    public let id: String
    let queue: JobQueue
    let worker: Worker?
    let counters: ProcessCounters?
    let interval: Duration
    let version: String
    let logger: Logger
    let keys: OperationsKeys
    let startedAt = Date()

    /// A worker's beacon: its id is the worker's consumer name.
    public init(
        queue: JobQueue, worker: Worker, counters: ProcessCounters?, interval: Duration = .seconds(5), version: String,
        logger: Logger
    ) {
        self.id = worker.options.consumer
        self.queue = queue
        self.worker = worker
        self.counters = counters
        self.interval = interval
        self.version = version
        self.logger = logger
        self.keys = queue.operationsKeys
    }

    /// A scheduler's beacon (`carbscan schedule`): it lists the process; on a `stop` signal `run` returns (give it
    /// `successTerminationBehavior: .gracefullyShutdownGroup`); other signals do not apply.
    public init(queue: JobQueue, schedulerInterval interval: Duration = .seconds(5), version: String, logger: Logger) {
        self.id = "\(ProcessInfo.processInfo.hostName):\(getpid()):\(String(UInt16.random(in: .min ... .max), radix: 16))"
        self.queue = queue
        self.worker = nil
        self.counters = nil
        self.interval = interval
        self.version = version
        self.logger = logger
        self.keys = queue.operationsKeys
    }

    /// How often signals and paused queues are read.
    var lookInterval: Duration { min(interval, .seconds(1)) }

    private let stopRequested = Mutex<Bool>(false)

    public func run() async throws {
        var beats = FailureStreak("process registry beat")
        var looks = FailureStreak("process registry signals")
        var nextBeat = ContinuousClock.now
        // A scheduler's beacon told to stop returns: its service group then stops the scheduler.
        while !Task.isShuttingDownGracefully && !Task.isCancelled && !(worker == nil && isStopRequested) {
            if ContinuousClock.now >= nextBeat {
                do {
                    try await beat()
                    beats.succeeded(logger: logger)
                } catch {
                    _ = beats.failed(error, logger: logger)
                }
                nextBeat = ContinuousClock.now + interval
            }
            do {
                // A quiet or stop shows in the registry at once, not at the next beat.
                if try await look() { nextBeat = .now }
                looks.succeeded(logger: logger)
            } catch {
                _ = looks.failed(error, logger: logger)
            }
            let nap = max(.zero, min(lookInterval, nextBeat - .now))
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: nap) }
        }
        // Also when the task was cancelled (not run by a service group): the leaving must not be cancelled with it.
        await Task { await self.leave() }.value
    }

    var state: ProcessState {
        guard let worker else { return stopRequested.withLock { $0 } ? .stopping : .running }
        if worker.isStopping || Task.isShuttingDownGracefully { return .stopping }
        return worker.isQuiet ? .quiet : .running
    }

    /// Writes the process, its busy jobs and the history counted since the last beat.
    func beat() async throws {
        let now = String(Int64(Date().timeIntervalSince1970 * 1000))
        let ttl = String(interval.milliseconds * 2)
        let totals = counters?.totals ?? (0, 0)
        let busy = worker?.busyJobs ?? []
        var served: [ServedQueue] = []
        if let worker {
            let limits = worker.queueLimits
            served = worker.queueNames.map { ServedQueue(name: $0, limit: limits[$0]) }
        }
        let queuesJSON = String(decoding: try JSONEncoder().encode(served), as: UTF8.self)
        let fields: [(ProcessField, String)] = [
            (.kind, worker == nil ? ProcessKind.scheduler.rawValue : ProcessKind.worker.rawValue),
            (.host, ProcessInfo.processInfo.hostName), (.pid, String(getpid())), (.version, version), (.queues, queuesJSON),
            (.concurrency, String(worker?.options.concurrency ?? 0)), (.busy, String(busy.count)), (.done, String(totals.0)),
            (.failed, String(totals.1)), (.state, state.rawValue),
            (.startedMs, String(Int64(startedAt.timeIntervalSince1970 * 1000))), (.beatMs, now),
        ]
        var commands: [[String]] = [
            ["HSET", keys.process(id)] + fields.flatMap { [$0.0.rawValue, $0.1] }, ["PEXPIRE", keys.process(id), ttl],
            ["DEL", keys.work(id)],
        ]
        if !busy.isEmpty {
            commands.append(
                ["HSET", keys.work(id)]
                    + busy.flatMap { [$0.id.rawValue, "\($0.kind) \($0.queue) \(Int64($0.startedAt.timeIntervalSince1970 * 1000))"] })
            commands.append(["PEXPIRE", keys.work(id), ttl])
        }
        commands.append(["ZADD", keys.processes, now, id])
        let pending = counters?.takePending() ?? [:]
        commands += JobHistory(queue: queue).commands(adding: pending)
        do {
            let replies = try await queue.redis.pipeline(commands)
            for case .error(let message) in replies { throw RedisError(.server, message) }
        } catch {
            counters?.restore(pending)
            throw error
        }
    }

    /// Reads and acts on this process's signals and the paused queues; true when the state changed.
    @discardableResult
    func look() async throws -> Bool {
        let replies = try await queue.redis.pipeline([["LPOP", keys.signals(id), "100"], ["SMEMBERS", keys.paused]])
        if let worker {
            worker.setPausedQueues(Set(replies[1].array?.compactMap(\.string) ?? []))
        }
        let before = state
        for wire in replies[0].array?.compactMap(\.string) ?? [] {
            guard let signal = ProcessSignal(wire: wire) else {
                logger.warning("unknown process signal", metadata: ["signal": "\(wire.prefix(40))"])
                continue
            }
            logger.info("process signal", metadata: ["signal": "\(wire)", "process": "\(id)"])
            switch signal {
            case .quiet: worker?.quiet()
            case .stop:
                if let worker {
                    worker.requestStop()
                } else {
                    stopRequested.withLock { $0 = true }
                }
            case .cancel(let job): worker?.cancel(job)
            }
        }
        return state != before
    }

    /// Whether a scheduler's beacon was told to stop (the scheduler's command ends then).
    public var isStopRequested: Bool { stopRequested.withLock { $0 } }

    /// Writes the last counts and removes the process from the registry.
    func leave() async {
        let pending = counters?.takePending() ?? [:]
        var commands = JobHistory(queue: queue).commands(adding: pending)
        commands += [
            // One DEL each: the keys are in different slots of a cluster.
            ["ZREM", keys.processes, id], ["DEL", keys.process(id)], ["DEL", keys.work(id)], ["DEL", keys.signals(id)],
        ]
        _ = try? await queue.redis.pipeline(commands)
    }
}
