import Dispatch
import Foundation
import Logging
import Synchronization

/// An OS thread that owns one `PostgresConnection` and runs every job on it, so blocking libpq calls never touch
/// Swift's cooperative pool. The pool lends a thread to one caller at a time, so jobs rarely queue here.
final class ConnectionThread: Sendable {
    /// Runs on the connection's thread; the connection never leaves it.
    typealias Job = @Sendable (PostgresConnection) -> Void

    private struct State {
        var queue: [Job] = []
        var closed = false
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    let configuration: PostgresConfiguration
    private let logger: Logger

    init(name: String, configuration: PostgresConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let thread = Thread { [self] in self.loop() }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the connection's thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws(PostgresError) -> T) async throws(PostgresError) -> T {
        let result: Result<T, PostgresError> = await withCheckedContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                if state.closed { return false }
                state.queue.append { connection in
                    continuation.resume(returning: Result { () throws(PostgresError) in try body(connection) })
                }
                return true
            }
            if accepted {
                wakeup.signal()
            } else {
                continuation.resume(returning: .failure(PostgresError(.closed, "the Postgres client was shut down")))
            }
        }
        return try result.get()
    }

    /// Stops the thread (closing its connection) after the queued jobs ran.
    func close() {
        state.withLock { $0.closed = true }
        wakeup.signal()
    }

    private func loop() {
        let connection = PostgresConnection(configuration: configuration, logger: logger)
        while true {
            let (jobs, closed) = state.withLock { state -> ([Job], Bool) in
                let jobs = state.queue
                state.queue.removeAll(keepingCapacity: true)
                return (jobs, state.closed)
            }
            if jobs.isEmpty {
                if closed { break }
                // Every append signals after it, so a job queued after the check above still wakes us.
                wakeup.wait()
                continue
            }
            for job in jobs { job(connection) }
        }
        connection.close()
    }
}
