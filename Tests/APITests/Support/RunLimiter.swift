/// Bounds how many `TestAPI.run`s hold Postgres connections at once: Swift Testing starts every async test
/// together, and each run opens a pool; without a bound a full suite exceeds the server's `max_connections`.
actor RunLimiter {
    static let shared = RunLimiter(limit: 8)

    private let limit: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) { self.limit = limit }

    func acquire() async {
        if running < limit {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the slot to the next waiter, if any.
    func release() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
