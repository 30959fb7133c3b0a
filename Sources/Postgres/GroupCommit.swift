import Synchronization

/// Many callers' writes in one statement and one commit (group commit, as Postgres does for its WAL).
///
/// A caller hands in its item and waits for its output. When no batch is being written the item goes at once, alone:
/// a lone job waits for nobody. While `maxInFlight` batches are being written, the items that arrive wait together
/// and go as the next batch (at most `maxBatch` of them), so under load one statement and one commit serve many jobs.
/// `write` gets the items in order and returns one output per item, in the same order; it runs on the pool, each
/// batch in its own statement(s).
///
/// A batch that fails is written again one item at a time, so one bad row (a deleted user, a broken constraint)
/// fails only its own caller. A broken connection fails the whole batch without that: every item would meet it.
package final class GroupCommit<Item: Sendable, Output: Sendable>: Sendable {
    package typealias Write = @Sendable (_ items: [Item], _ database: PostgresClient) async throws -> [Output]

    /// How the writes were grouped, since the start.
    package struct Stats: Sendable, Equatable {
        /// Statements `write` was called for, the one-item retries after a failed batch included.
        package var batches = 0
        /// Items written (or failed) through them.
        package var items = 0
        /// The largest batch.
        package var largest = 0

        package init(batches: Int = 0, items: Int = 0, largest: Int = 0) {
            self.batches = batches
            self.items = items
            self.largest = largest
        }
    }

    private struct Waiting {
        var item: Item
        var continuation: CheckedContinuation<Output, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        var writing = 0
        var stats = Stats()

        mutating func take(_ most: Int) -> [Waiting] {
            let count = min(most, waiting.count)
            defer { waiting.removeFirst(count) }
            return Array(waiting.prefix(count))
        }
    }

    private let database: PostgresClient
    private let maxBatch: Int
    private let maxInFlight: Int
    private let write: Write
    private let state = Mutex(State())

    /// - Parameters:
    ///   - maxBatch: the most items one statement writes.
    ///   - maxInFlight: batches written at once (each on its own pooled connection).
    package init(database: PostgresClient, maxBatch: Int = 256, maxInFlight: Int = 1, write: @escaping Write) {
        precondition(maxBatch >= 1 && maxInFlight >= 1)
        self.database = database
        self.maxBatch = maxBatch
        self.maxInFlight = maxInFlight
        self.write = write
    }

    package var stats: Stats { state.withLock { $0.stats } }

    /// Items handed in and not yet in a batch.
    package var waiting: Int { state.withLock { $0.waiting.count } }

    /// Writes `item` with whatever else is waiting, and returns its output once its batch committed.
    package func submit(_ item: Item) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            let batch: [Waiting]? = state.withLock { state in
                state.waiting.append(Waiting(item: item, continuation: continuation))
                guard state.writing < maxInFlight else { return nil }
                state.writing += 1
                return state.take(maxBatch)
            }
            // The writer outlives no caller: it ends when nothing waits. Its task is not the caller's, so cancelling
            // one job never abandons its neighbours' statement half-way (a job that timed out meanwhile finds its row
            // when it is retried). It inherits the first caller's task-locals: a traced batch's statement is a span of
            // that job's trace.
            if let batch { Task { await self.writeWhileWaiting(batch) } }
        }
    }

    private func writeWhileWaiting(_ first: [Waiting]) async {
        var batch = first
        while true {
            await writeBatch(batch)
            let next: [Waiting]? = state.withLock { state in
                guard !state.waiting.isEmpty else {
                    state.writing -= 1
                    return nil
                }
                return state.take(maxBatch)
            }
            guard let next else { return }
            batch = next
        }
    }

    private func writeBatch(_ batch: [Waiting]) async {
        do {
            let outputs = try await written(batch.map(\.item))
            for (waiting, output) in zip(batch, outputs) { waiting.continuation.resume(returning: output) }
        } catch let error where batch.count > 1 && !Self.isOutage(error) {
            for waiting in batch {
                do {
                    waiting.continuation.resume(returning: try await written([waiting.item])[0])
                } catch {
                    waiting.continuation.resume(throwing: error)
                }
            }
        } catch {
            for waiting in batch { waiting.continuation.resume(throwing: error) }
        }
    }

    /// Postgres unreachable or the client closed: writing the items one by one would meet it once per item.
    private static func isOutage(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError else { return false }
        return error.code == .connection || error.code == .closed
    }

    private func written(_ items: [Item]) async throws -> [Output] {
        state.withLock { state in
            state.stats.batches += 1
            state.stats.items += items.count
            state.stats.largest = max(state.stats.largest, items.count)
        }
        let outputs = try await write(items, database)
        guard outputs.count == items.count else {
            throw PostgresError(.protocolError, "a group commit wrote \(items.count) items and returned \(outputs.count) outputs")
        }
        return outputs
    }
}
