import Synchronization

/// Counts free execution slots; the fetcher waits here when all are busy.
final class Slots: Sendable {
    private struct State {
        var free: Int
        var waiter: CheckedContinuation<Int, Never>?
        /// Counts releases, so a fetcher that found every queue at its limit waits for the next one it has not seen.
        var releases = 0
        var releaseWaiter: CheckedContinuation<Void, Never>?
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

    /// Takes up to `n` free slots before a read (the worker's two fetchers read at once: neither may read for slots
    /// the other took); returns how many. What the read did not fill goes back with `giveBack`.
    func claim(upTo n: Int) -> Int {
        state.withLock { state in
            let claimed = max(0, min(n, state.free))
            state.free -= claimed
            return claimed
        }
    }

    /// Returns claimed slots no job took (not a job's end: `releases` does not count it).
    func giveBack(_ n: Int) {
        guard n > 0 else { return }
        let (waiter, free) = state.withLock { state -> (CheckedContinuation<Int, Never>?, Int) in
            state.free += n
            defer { state.waiter = nil }
            return (state.waiter, state.free)
        }
        waiter?.resume(returning: free)
    }

    func release() {
        let (waiter, free, releaseWaiter) = state.withLock {
            state -> (CheckedContinuation<Int, Never>?, Int, CheckedContinuation<Void, Never>?) in
            state.free += 1
            state.releases += 1
            defer { (state.waiter, state.releaseWaiter) = (nil, nil) }
            return (state.waiter, state.free, state.releaseWaiter)
        }
        waiter?.resume(returning: free)
        releaseWaiter?.resume()
    }

    /// The number of releases so far (read before deciding to wait for the next).
    var releases: Int { state.withLock { $0.releases } }

    /// Waits until a slot is released after the `seen`-th release (at once if one already was), or a wake.
    func waitForRelease(after seen: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.releases != seen { return true }
                state.releaseWaiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Counts as a release for a fetcher waiting on every queue's limit: the limits changed, so it looks again.
    func limitsChanged() {
        let releaseWaiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.releases += 1
            defer { state.releaseWaiter = nil }
            return state.releaseWaiter
        }
        releaseWaiter?.resume()
    }

    /// Wakes a waiting fetcher (at shutdown) as if a slot were free.
    func wake() {
        let (waiter, releaseWaiter) = state.withLock { state -> (CheckedContinuation<Int, Never>?, CheckedContinuation<Void, Never>?) in
            defer { (state.waiter, state.releaseWaiter) = (nil, nil) }
            return (state.waiter, state.releaseWaiter)
        }
        waiter?.resume(returning: 0)
        releaseWaiter?.resume()
    }

    var busy: Int { state.withLock { capacity - $0.free } }
}
