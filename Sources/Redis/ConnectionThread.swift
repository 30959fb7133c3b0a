import Dispatch
import Foundation
import Logging
import Synchronization

/// An OS thread that owns one `RedisConnection` and runs every call on it, so blocking hiredis calls never touch
/// Swift's cooperative pool. Requests queued while a batch is in flight go out together as one pipeline
/// (automatic pipelining: many concurrent single commands cost one round-trip).
///
/// The thread is also a task executor. A task that prefers it (`withTaskExecutorPreference`) runs on this thread
/// between round-trips: while nothing else waits for the thread its command is sent right there, else it is queued
/// without waking another thread and the reply resumes it here, never through the cooperative pool. A caller that
/// awaits one command after another saves two thread switches per command. Its code holds up the connection while it
/// runs, so only short, non-blocking work belongs there.
final class ConnectionThread: TaskExecutor, Sendable {
    struct Request: Sendable {
        var commands: [[String]]
        /// Extra read time for a blocking command (`BLOCK`/`BLPOP`), added to the configured read timeout.
        var blockFor: Duration?
        /// Writes that count only once replicas hold them (`WAIT` after them, on this connection).
        var durability: Durability?
        var continuation: CheckedContinuation<[RedisValue], any Error>
    }

    private struct State {
        var queue: [Request] = []
        /// Jobs of tasks that prefer this thread as their executor.
        var jobs: [UnownedJob] = []
        var closed = false
        var clientID = 0
    }

    /// The connection and its bookkeeping: used only on this thread, by the loop and by a preferring task's call.
    private final class Link {
        let connection: RedisConnection
        /// Whether the connection is counted as open in `RedisConnectionStats`, and whether it ever connected.
        var countedOpen = false
        var everConnected = false

        init(_ configuration: RedisConfiguration) { connection = RedisConnection(configuration: configuration) }

        /// After a round trip: a connection it dropped is no longer counted as open.
        func noteDropped() {
            if countedOpen && !connection.isConnected {
                countedOpen = false
                RedisConnectionStats.openCount.wrappingSubtract(1, ordering: .relaxed)
            }
        }
    }

    private let state = Mutex(State())
    /// Touched only on this thread (see `Link`), never elsewhere.
    private nonisolated(unsafe) let link: Link
    private let wakeup = DispatchSemaphore(value: 0)
    private let configuration: RedisConfiguration
    private let logger: Logger
    private let name: String
    /// The OS thread's id once it runs (0 before), so a caller can tell it is on this thread.
    private let threadID = Atomic<UInt>(0)

    init(name: String, configuration: RedisConfiguration, logger: Logger) {
        self.name = name
        self.configuration = configuration
        self.logger = logger
        self.link = Link(configuration)
        let thread = Thread { [self] in self.loop() }
        thread.name = name
        thread.start()
    }

    /// The server-side id of the current connection (0 before the first connect).
    var clientID: Int { state.withLock { $0.clientID } }

    /// Runs `commands` on this thread's connection. `blockFor`: they may block on the server that long (they go alone).
    /// `durability`: they are followed by `WAIT`, shared with the other durable requests of their batch, and the call
    /// throws ``RedisError/Code/notReplicated`` unless enough replicas acknowledged them in time.
    func submit(_ commands: [[String]], blockFor: Duration? = nil, durability: Durability? = nil) async throws -> [RedisValue] {
        if blockFor == nil, durability == nil, isCurrent, link.connection.isConnected,
            state.withLock({ $0.queue.isEmpty && $0.jobs.isEmpty && !$0.closed })
        {
            return try runHere(commands)
        }
        return try await withCheckedThrowingContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                if state.closed { return false }
                state.queue.append(Request(commands: commands, blockFor: blockFor, durability: durability, continuation: continuation))
                return true
            }
            if accepted {
                wakeup.signal()
            } else {
                continuation.resume(throwing: RedisError(.closed, "the Redis client was shut down"))
            }
        }
    }

    /// A call from a task running on this thread (it prefers it as executor) while nothing else waits for the thread:
    /// the round trip is made here and now, as the loop would make it next, without a continuation, a queued request
    /// and the job's hand-back to the loop. Anything waiting sends the call the usual way, so a task that calls in a
    /// loop cannot keep other tasks' requests or jobs waiting.
    private func runHere(_ commands: [[String]]) throws(RedisError) -> [RedisValue] {
        RedisConnectionStats.busyCount.wrappingAdd(1, ordering: .relaxed)
        defer {
            RedisConnectionStats.busyCount.wrappingSubtract(1, ordering: .relaxed)
            link.noteDropped()
        }
        return try link.connection.pipeline(commands)
    }

    /// True on this connection's own thread.
    var isCurrent: Bool { threadID.load(ordering: .relaxed) == UInt(pthread_self()) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let accepted = state.withLock { state -> Bool in
            if state.closed { return false }
            state.jobs.append(job)
            return true
        }
        if accepted {
            wakeup.signal()
        } else {
            // A closed thread runs nothing more: the task goes on in the cooperative pool.
            globalConcurrentExecutor.enqueue(job)
        }
    }

    /// Stops the thread after the queued requests are answered.
    func close() {
        state.withLock { $0.closed = true }
        wakeup.signal()
    }

    private func loop() {
        let connection = link.connection
        var failures = 0
        var nextAttempt = ContinuousClock.now
        var lastError: RedisError?
        // The process's reconnect count at the last failure: once another connection got through, Redis is probably
        // back and this one tries at once rather than failing fast until its own window ends (recovery took up to
        // the window plus the caller's own backoff, 2 s, where it is now about one).
        var reconnectsAtFailure = 0
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        while true {
            wakeup.wait()
            // Tasks that prefer this thread: they run until they suspend, usually on a command for this connection.
            while case let jobs = takeJobs(), !jobs.isEmpty {
                for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
            }
            let (batch, closed) = state.withLock { state -> ([Request], Bool) in
                let batch = state.queue
                state.queue.removeAll(keepingCapacity: true)
                // Not done while a task's job waits (its enqueue signalled: the next wait returns at once).
                return (batch, state.closed && state.jobs.isEmpty)
            }
            if batch.isEmpty {
                if closed { break }
                continue
            }
            if !connection.isConnected {
                // Reconnect with capped exponential backoff; within the backoff window, fail fast with the last error.
                if ContinuousClock.now < nextAttempt, RedisConnectionStats.reconnects == reconnectsAtFailure, let lastError {
                    for request in batch { request.continuation.resume(throwing: lastError) }
                    continue
                }
                do {
                    try connection.connect()
                    if link.everConnected { RedisConnectionStats.reconnectCount.wrappingAdd(1, ordering: .relaxed) }
                    link.everConnected = true
                    link.countedOpen = true
                    RedisConnectionStats.openCount.wrappingAdd(1, ordering: .relaxed)
                    if failures > 0 {
                        logger.info("redis reconnected", metadata: ["redis": "\(configuration.displayAddress)", "attempts": "\(failures)"])
                    }
                    failures = 0
                    lastError = nil
                    let id = connection.clientID
                    state.withLock { $0.clientID = id }
                } catch {
                    failures += 1
                    let delay = min(configuration.reconnectBase * (1 << min(failures - 1, 16)), configuration.reconnectMax)
                    nextAttempt = ContinuousClock.now + delay
                    reconnectsAtFailure = RedisConnectionStats.reconnects
                    lastError = error
                    // Once per outage, not per try: the reconnects go on quietly until one succeeds.
                    if failures == 1 {
                        logger.warning(
                            "redis unreachable; reconnecting",
                            metadata: ["redis": "\(configuration.displayAddress)", "error": "\(error.message)"])
                    }
                    for request in batch { request.continuation.resume(throwing: error) }
                    continue
                }
            }
            RedisConnectionStats.busyCount.wrappingAdd(1, ordering: .relaxed)
            run(batch, on: connection)
            RedisConnectionStats.busyCount.wrappingSubtract(1, ordering: .relaxed)
            link.noteDropped()
        }
        if link.countedOpen { RedisConnectionStats.openCount.wrappingSubtract(1, ordering: .relaxed) }
        connection.close()
    }

    private func takeJobs() -> [UnownedJob] {
        state.withLock { state in
            defer { state.jobs.removeAll(keepingCapacity: true) }
            return state.jobs
        }
    }

    private func run(_ batch: [Request], on connection: RedisConnection) {
        guard batch.contains(where: { $0.blockFor != nil || $0.durability != nil }) else {
            return resume(
                batch, with: Result { () throws(RedisError) in try connection.pipeline(batch.flatMap(\.commands)) }.map { split($0, batch) }
            )
        }
        let plain = batch.filter { $0.blockFor == nil && $0.durability == nil }
        if !plain.isEmpty { run(plain, on: connection) }
        let durable = batch.filter { $0.blockFor == nil && $0.durability != nil }
        if !durable.isEmpty { runDurable(durable, on: connection) }
        // Blocking commands go alone (they hold the connection for their whole block time).
        for request in batch where request.blockFor != nil {
            if !connection.isConnected {
                resume([request], with: .failure(RedisError(.connection, "connection lost")))
                continue
            }
            connection.setReadTimeout(configuration.readTimeout + (request.blockFor ?? .zero))
            resume(
                [request],
                with: Result { () throws(RedisError) in
                    // No command: read the next pushed reply (a pub/sub message).
                    request.commands.isEmpty ? [try connection.readReply()] : try connection.pipeline(request.commands)
                }.map { [$0] })
            connection.setReadTimeout(configuration.readTimeout)
        }
    }

    /// Durable writes go out together, followed by one `WAIT`: it covers every write before it on the connection, so
    /// concurrent durable enqueues share one wait for the replicas (group commit) instead of one round trip each
    /// (`ops/bench/durable.sh`, 64 enqueues in flight: 6,200/s with a `WAIT` each, 48,600/s sharing them). `WAIT` holds
    /// the connection on the server until it answers, so the read timeout is stretched by the longest timeout asked.
    private func runDurable(_ batch: [Request], on connection: RedisConnection) {
        let asked = batch.compactMap(\.durability)
        let wait = Durability(replicas: asked.map(\.replicas).max() ?? 1, timeout: asked.map(\.timeout).max() ?? .seconds(1))
        connection.setReadTimeout(configuration.readTimeout + wait.timeout)
        let result = Result { () throws(RedisError) in try connection.pipeline(batch.flatMap(\.commands) + [wait.command]) }
        connection.setReadTimeout(configuration.readTimeout)
        switch result {
        case .success(var replies):
            let acknowledged = replies.removeLast()
            for (request, group) in zip(batch, split(replies, batch)) {
                do throws(RedisError) {
                    try request.durability?.check(acknowledged: acknowledged)
                    request.continuation.resume(returning: group)
                } catch {
                    request.continuation.resume(throwing: error)
                }
            }
        case .failure(let error):
            resume(batch, with: .failure(error))
        }
    }

    /// `replies` of the batch's commands in order, cut into each request's.
    private func split(_ replies: [RedisValue], _ batch: [Request]) -> [[RedisValue]] {
        // One request (a caller awaiting one call after another): its replies as they are, not copied.
        if batch.count == 1 { return [replies] }
        var groups: [[RedisValue]] = []
        groups.reserveCapacity(batch.count)
        var index = 0
        for request in batch {
            groups.append(Array(replies[index..<index + request.commands.count]))
            index += request.commands.count
        }
        return groups
    }

    private func resume(_ batch: [Request], with result: Result<[[RedisValue]], RedisError>) {
        switch result {
        case .success(let groups):
            for (request, replies) in zip(batch, groups) { request.continuation.resume(returning: replies) }
        case .failure(let error):
            for request in batch { request.continuation.resume(throwing: error) }
        }
    }
}
