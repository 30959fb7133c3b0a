import Accounts
import Foundation
import Logging
import Queue
import Redis
import ServiceLifecycle
import Synchronization

/// Lets requests wait for jobs to finish (`GET /jobs/{id}?wait=N`, the short wait of `POST /analyze` and
/// `POST /chat`), fed by ONE pub/sub subscription per API process to every queue's completion channel — not one
/// Redis connection per waiting request. A waiter also re-reads the job every second, so an event lost while
/// the subscription reconnects costs at most that second.
///
/// The same subscription carries sign-in revocations to the process's `SessionCache` (channel
/// `<prefix>:sessions`); the cache is emptied whenever the subscription is (re)made, since messages sent while
/// it was down are lost.
package final class JobWaiter: Service, Sendable {
    private struct State {
        var waiters: [String: [UUID: CheckedContinuation<Void, Never>]] = [:]
        /// Event streams following a job: woken by every message about it, for as long as they follow.
        var followers: [String: [UUID: JobFollower]] = [:]
        /// Shutting down: waits end with the job as it stands (a long-poll gets it, `analyze` and `chat` a 202).
        var stopped = false
    }

    private let queue: JobQueue
    private let sessions: SessionCache?
    private let logger: Logger
    private let state = Mutex(State())
    /// The subscriptions' connections now, by their first channel.
    private let subscribers = Mutex<[String: BlockingConnection]>([:])
    /// With read replicas: handing a user a finished job's result marks their write (the worker wrote their rows first).
    private let reads = Mutex<ReadRouting?>(nil)
    /// A quiet subscription is renewed this often: the only way to stop a pub/sub read in time at shutdown.
    private let idleRenewal: Duration

    package init(queue: JobQueue, sessions: SessionCache? = nil, logger: Logger, idleRenewal: Duration = .seconds(2)) {
        self.queue = queue
        self.sessions = sessions
        self.logger = logger
        self.idleRenewal = idleRenewal
    }

    /// The job's record once it has finished (succeeded, failed or cancelled), or as it stands when `timeout` passes; nil when
    /// there is no such job.
    package func wait(for id: JobID, timeout: Duration) async throws -> JobRecord? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            guard let record = try await queue.record(id) else { return nil }
            let now = clock.now
            if record.status.isFinal || now >= deadline || Task.isCancelled
                || state.withLock({ $0.stopped })
            {
                return record
            }
            await pause(id.rawValue, for: min(deadline - now, .seconds(1)))
        }
    }

    /// Notes that the job's owner was answered with its end: no push about it goes out (``ResultSeen``). Best effort: a
    /// mark lost to an outage costs one push too many.
    ///
    /// With read replicas it also marks the owner's write (``ReadRouting``): the job wrote their rows (a chat's
    /// messages, an analysis's meal) before it finished, and the app, told it finished, reads them next.
    package func markSeen(_ record: JobRecord) async {
        try? await ResultSeen(redis: queue.redis, prefix: queue.options.prefix).mark(record.id, queue: record.queue)
        if let owner = record.owner, let reads = reads.withLock({ $0 }) { await reads.noteWrite(by: owner) }
    }

    /// Marks the owners of the results this waiter hands out as having written (see `markSeen`).
    package func markOwners(through reads: ReadRouting) {
        self.reads.withLock { $0 = reads.replicas == nil ? nil : reads }
    }

    /// The job's status as clients name it, or nil when there is no such job.
    package func currentStatus(_ id: JobID) async throws -> String? {
        try await queue.record(id)?.status.rawValue
    }

    /// Subscribes to every queue's completion channel and wakes the waiters of each finished job, until shutdown.
    ///
    /// The channels are sharded (`SSUBSCRIBE`, Redis 7): on a cluster each lives on its slot's node, so each gets a
    /// subscription (and connection) of its own there; on a standalone server one subscription carries them all.
    package func run() async throws {
        let sessionChannel = Self.sessionChannel(prefix: queue.options.prefix)
        let channels = queue.allShards.map { queue.keys($0).events } + (sessions == nil ? [] : [sessionChannel])
        await withGracefulShutdownHandler {
            var streak = FailureStreak("job event subscription")
            var isCluster: Bool?
            while isCluster == nil && !Task.isCancelled && !Task.isShuttingDownGracefully {
                do {
                    isCluster = try await queue.redis.isCluster
                } catch {
                    try? await Task.sleep(for: streak.failed(error, logger: logger))
                }
            }
            let subscriptions = isCluster == true ? channels.map { [$0] } : [channels]
            await withDiscardingTaskGroup { group in
                for channels in subscriptions {
                    group.addTask {
                        await self.subscribe(channels, sessionChannel: sessionChannel)
                    }
                }
            }
        } onGracefulShutdown: {
            // A subscriber waits up to `idleRenewal` for a message; closing it ends the wait at once (an idle
            // `serve` took 4–6 s to exit on SIGTERM).
            let connections = self.subscribers.withLock { Array($0.values) }
            Task { for connection in connections { await connection.disconnect() } }
        }
        wakeEveryone()
    }

    /// One subscription to `channels` (one slot's on a cluster), made again after each failure, until shutdown.
    private func subscribe(_ channels: [String], sessionChannel: String) async {
        var streak = FailureStreak("job event subscription")
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let connection = queue.redis.blockingConnection(name: "job-events")
            // Shutdown closes it to end its wait.
            subscribers.withLock { $0[channels[0]] = connection }
            do {
                _ = try await connection.send(["SSUBSCRIBE"] + channels, blockFor: .seconds(1))
                // One confirmation per channel; the first came back with SSUBSCRIBE.
                for _ in 1..<channels.count { _ = try await connection.receive(timeout: .seconds(5)) }
                if channels.contains(sessionChannel) { sessions?.forgetAll() }
                streak.succeeded(logger: logger)
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
                    let message = try await connection.receive(timeout: idleRenewal)
                    guard case .array(let parts) = message, parts.count == 3, parts[0].string == "smessage",
                        let channel = parts[1].string, let text = parts[2].string
                    else { continue }
                    if channel == sessionChannel {
                        sessions?.forget(message: text)
                    } else if let id = text.split(separator: " ").first {
                        notify(String(id))
                    }
                }
            } catch let error as RedisError where error.code == .timeout {
                // A quiet channel: renew the subscription (and check for shutdown).
            } catch {
                // At shutdown the connection was closed on purpose: nothing to report.
                if Task.isShuttingDownGracefully { break }
                // Waiters fall back to polling meanwhile; one line per outage, not per try.
                try? await Task.sleep(for: streak.failed(error, logger: logger))
            }
            connection.close()
        }
    }

    /// Where revocations of cached sign-ins are published.
    package static func sessionChannel(prefix: String) -> String { "\(prefix):sessions" }

    private func notify(_ id: String) {
        let (waiting, following) = state.withLock { ($0.waiters.removeValue(forKey: id), $0.followers[id]) }
        for continuation in waiting?.values ?? [:].values { continuation.resume() }
        for follower in following?.values ?? [:].values { follower.wake() }
    }

    private func wakeEveryone() {
        let (waiting, following) = state.withLock { state in
            state.stopped = true
            defer {
                state.waiters.removeAll()
                state.followers.removeAll()
            }
            return (state.waiters.values.flatMap(\.values), state.followers.values.flatMap(\.values))
        }
        for continuation in waiting { continuation.resume() }
        for follower in following { follower.stop() }
    }

    /// Follows job `id` until ``JobFollower/end()``: the follower wakes whenever a message about the job arrives, and
    /// stops at shutdown. Made before the first read of the job, so nothing that happens between that read and the
    /// first wait is missed.
    package func follow(_ id: JobID) -> JobFollower {
        let follower = JobFollower(id: id.rawValue, token: UUID(), waiter: self)
        let stopped = state.withLock { state in
            if !state.stopped { state.followers[id.rawValue, default: [:]][follower.token] = follower }
            return state.stopped
        }
        if stopped { follower.stop() }
        return follower
    }

    fileprivate func unfollow(_ follower: JobFollower) {
        state.withLock { state in
            state.followers[follower.id]?[follower.token] = nil
            if state.followers[follower.id]?.isEmpty == true { state.followers[follower.id] = nil }
        }
    }

    /// Whether the process is shutting down (followers end their streams).
    package var isStopped: Bool { state.withLock { $0.stopped } }

    /// Sleeps until the job's event, `duration`, or cancellation, whichever comes first. Exactly one of them takes
    /// the continuation out of the table, so it is resumed once.
    private func pause(_ id: String, for duration: Duration) async {
        let token = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let stopped = state.withLock { state in
                    if !state.stopped { state.waiters[id, default: [:]][token] = continuation }
                    return state.stopped
                }
                if stopped { return continuation.resume() }
                Task {
                    try? await Task.sleep(for: duration)
                    self.resume(id, token)
                }
            }
        } onCancel: {
            resume(id, token)
        }
    }

    private func resume(_ id: String, _ token: UUID) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            let continuation = state.waiters[id]?.removeValue(forKey: token)
            if state.waiters[id]?.isEmpty == true { state.waiters[id] = nil }
            return continuation
        }
        continuation?.resume()
    }

    /// How many requests wait right now (for tests and metrics).
    package var waitingCount: Int { state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } } }
    /// How many event streams follow a job right now.
    package var followingCount: Int { state.withLock { $0.followers.values.reduce(0) { $0 + $1.count } } }
}

/// One event stream's hold on a job (``JobWaiter/follow(_:)``): wake-ups that arrive while the stream is writing are
/// kept (one is enough: the stream reads everything new), so none is lost between a read and the next wait.
package final class JobFollower: Sendable {
    package enum Wake: Sendable { case news, timeout, stopped }

    private struct State {
        var pending = false
        var stopped = false
        var continuation: CheckedContinuation<Wake, Never>?
        var generation = 0
        /// The pending wait's timeout, cancelled when news ends the wait first (thousands of streams wake often).
        var timer: Task<Void, Never>?
    }

    fileprivate let id: String
    fileprivate let token: UUID
    private weak let waiter: JobWaiter?
    private let state = Mutex(State())

    fileprivate init(id: String, token: UUID, waiter: JobWaiter) {
        self.id = id
        self.token = token
        self.waiter = waiter
    }

    /// Waits for news of the job, `timeout`, or shutdown, whichever comes first.
    package func next(timeout: Duration) async -> Wake {
        await withCheckedContinuation { (continuation: CheckedContinuation<Wake, Never>) in
            let (now, generation): (Wake?, Int) = state.withLock { state in
                if state.stopped { return (.stopped, 0) }
                if state.pending {
                    state.pending = false
                    return (.news, 0)
                }
                state.generation += 1
                state.continuation = continuation
                return (nil, state.generation)
            }
            if let now { return continuation.resume(returning: now) }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                self.resume(.timeout, generation: generation)
            }
            state.withLock { state in
                if state.generation == generation, state.continuation != nil { state.timer = timer } else { timer.cancel() }
            }
        }
    }

    fileprivate func wake() {
        let (continuation, timer) = state.withLock { state in
            defer {
                state.continuation = nil
                state.timer = nil
            }
            if state.continuation == nil { state.pending = true }
            return (state.continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume(returning: .news)
    }

    fileprivate func stop() {
        let (continuation, timer) = state.withLock { state in
            defer {
                state.continuation = nil
                state.timer = nil
            }
            state.stopped = true
            return (state.continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume(returning: .stopped)
    }

    private func resume(_ wake: Wake, generation: Int) {
        let continuation = state.withLock { state -> CheckedContinuation<Wake, Never>? in
            guard state.generation == generation else { return nil }
            defer {
                state.continuation = nil
                state.timer = nil
            }
            return state.continuation
        }
        continuation?.resume(returning: wake)
    }

    /// Stops following (the stream ended).
    package func end() {
        stop()
        waiter?.unfollow(self)
    }
}
