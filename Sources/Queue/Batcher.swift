import Synchronization

/// Collects items from many tasks and hands them out in batches: whatever piled up while the previous batch
/// was being written goes out together (group commit), so acks cost one round-trip per batch, not per job.
final class Batcher<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var waiter: CheckedContinuation<[Item]?, Never>?
        var closed = false
    }
    private let state = Mutex(State())

    func append(_ item: Item) {
        let waiter = state.withLock { state -> CheckedContinuation<[Item]?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.items.append(item)
            return nil
        }
        waiter?.resume(returning: [item])
    }

    /// The next batch; nil once closed and drained. One consumer only.
    func next() async -> [Item]? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> [Item]?? in
                if !state.items.isEmpty {
                    let items = state.items
                    state.items.removeAll(keepingCapacity: true)
                    return .some(items)
                }
                if state.closed { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<[Item]?, Never>? in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}
