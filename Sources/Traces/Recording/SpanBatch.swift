import Synchronization

/// The spans that ended and wait for the exporter: OpenTelemetry's batch span processor without a task of its own. A
/// span appends itself under a lock; the exporter is woken when a whole export batch is waiting (or by its timer,
/// `OTEL_BSP_SCHEDULE_DELAY`), and takes them. Past `capacity` (`OTEL_BSP_MAX_QUEUE_SIZE`) a span is dropped and
/// counted, as the specification asks of a full queue, rather than holding memory a collector that is down would
/// never free.
public final class SpanBatch: Sendable {
    private struct State {
        var spans: [FinishedSpan] = []
        var dropped = 0
        var waiter: CheckedContinuation<Void, Never>?
        var woken = false
    }

    /// The most spans kept waiting (`OTEL_BSP_MAX_QUEUE_SIZE`).
    public let capacity: Int
    /// How many spans wake the exporter, and the most one export sends (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    public let exportSize: Int
    private let state = Mutex(State())

    public init(capacity: Int = 2048, exportSize: Int = 512) {
        self.capacity = max(capacity, 1)
        self.exportSize = min(max(exportSize, 1), self.capacity)
    }

    func append(_ span: FinishedSpan) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard state.spans.count < capacity else {
                state.dropped += 1
                return nil
            }
            state.spans.append(span)
            guard state.spans.count == exportSize else { return nil }
            return Self.wake(&state)
        }
        waiter?.resume()
    }

    /// The oldest spans waiting, at most `exportSize`, and how many were dropped since the last call.
    public func take() -> (spans: [FinishedSpan], dropped: Int) {
        state.withLock { state in
            let dropped = state.dropped
            state.dropped = 0
            guard state.spans.count > exportSize else {
                defer { state.spans.removeAll(keepingCapacity: true) }
                return (state.spans, dropped)
            }
            let taken = Array(state.spans.prefix(exportSize))
            state.spans.removeFirst(exportSize)
            return (taken, dropped)
        }
    }

    /// How many spans wait.
    public var count: Int { state.withLock { $0.spans.count } }

    /// Returns once woken: by a whole export batch, or by ``wake()``; at once if either came since the last wait.
    /// One waiter at a time (the exporter).
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now: Bool = state.withLock { state in
                if state.woken {
                    state.woken = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Wakes the exporter (its timer, a flush, the shutdown).
    public func wake() {
        state.withLock { Self.wake(&$0) }?.resume()
    }

    private static func wake(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        guard let waiter = state.waiter else {
            state.woken = true
            return nil
        }
        state.waiter = nil
        return waiter
    }
}
