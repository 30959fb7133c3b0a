import Synchronization

/// Counts free execution slots; the fetcher waits here when all are busy.
final class Slots: Sendable {
    private struct State {
        var free: Int
        var waiter: CheckedContinuation<Int, Never>?
    }
    private let state: Mutex<State>
    let capacity: Int

    init(_ capacity: Int) {
        self.capacity = capacity
        state = Mutex(State(free: capacity))
    }

    /// Waits until at least one slot is free; returns how many are.
    func waitForFree() async -> Int {
        await withCheckedContinuation { continuation in
            let free = state.withLock { state -> Int? in
                if state.free > 0 { return state.free }
                state.waiter = continuation
                return nil
            }
            if let free { continuation.resume(returning: free) }
        }
    }

    func take(_ n: Int) { state.withLock { $0.free -= n } }

    func release() {
        let (waiter, free) = state.withLock { state -> (CheckedContinuation<Int, Never>?, Int) in
            state.free += 1
            defer { state.waiter = nil }
            return (state.waiter, state.free)
        }
        waiter?.resume(returning: free)
    }

    /// Wakes a waiting fetcher (at shutdown) as if a slot were free.
    func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Int, Never>? in
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: 0)
    }

    var busy: Int { state.withLock { capacity - $0.free } }
}
