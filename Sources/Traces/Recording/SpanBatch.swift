import Synchronization

/// The spans that ended and wait for the exporter: OpenTelemetry's batch span processor without a task of its own. A
/// span writes itself, as the exporter sends it, under a lock (``EncodedSpans``); the exporter is woken when a whole
/// export batch is waiting (or by its timer, `OTEL_BSP_SCHEDULE_DELAY`), and takes them. Past `capacity`
/// (`OTEL_BSP_MAX_QUEUE_SIZE`) a span is dropped and counted, as the specification asks of a full queue, rather than
/// holding memory a collector that is down would never free.
///
/// Written as they end, not kept as objects the exporter encodes: with an object per span, encoded in a second pass
/// and then released, the export's share of a recorded span's cost to a no-op job was 1.0 µs, and is 0.4–0.5 µs
/// written this way (perf, 2026-12-07).
public final class SpanBatch: Sendable {
    private struct State {
        /// `ScopeSpans.spans` entries, one per span.
        var spans: ProtobufWriter
        /// Where each span's entry ends in `spans`.
        var ends: [Int] = []
        var dropped = 0
        var waiter: CheckedContinuation<Void, Never>?
        var woken = false
    }

    /// The most spans kept waiting (`OTEL_BSP_MAX_QUEUE_SIZE`).
    public let capacity: Int
    /// How many spans wake the exporter, and the most one export sends (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    public let exportSize: Int
    private let state: Mutex<State>
    /// The bytes of the last export sent, written again by the next (``recycle(_:)``).
    private let spare = Mutex<[UInt8]?>(nil)

    public init(capacity: Int = 2048, exportSize: Int = 512) {
        self.capacity = max(capacity, 1)
        self.exportSize = min(max(exportSize, 1), self.capacity)
        state = Mutex(State(spans: ProtobufWriter(capacity: Self.reserved(self.exportSize))))
    }

    /// The bytes kept for a whole export batch: about 400 a span (a worker's consumer span, a request's server span).
    private static func reserved(_ spans: Int) -> Int { min(spans, 512) * 400 }

    /// Writes one span (`write` writes its `Span` message), unless the batch is full.
    func append(_ write: (inout ProtobufWriter) -> Void) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard state.ends.count < capacity else {
                state.dropped += 1
                return nil
            }
            state.spans.message(2, write)  // ScopeSpans.spans
            state.ends.append(state.spans.bytes.count)
            guard state.ends.count == exportSize else { return nil }
            return Self.wake(&state)
        }
        waiter?.resume()
    }

    /// The oldest spans waiting, at most `exportSize`, and how many were dropped since the last call.
    public func take() -> (spans: EncodedSpans, dropped: Int) {
        // The memory the next spans are written into, found before the lock is taken: allocated under it, spans that
        // ended meanwhile waited for the lock (its slow path was 0.1 µs of a recorded span, perf 2026-12-08).
        var bytes = spare.withLock { $0.take() } ?? []
        if bytes.capacity < Self.reserved(exportSize) { bytes.reserveCapacity(Self.reserved(exportSize)) }
        let (count, dropped) = state.withLock { state in
            let dropped = state.dropped
            state.dropped = 0
            let count = min(state.ends.count, exportSize)
            guard count > 0 else { return (0, dropped) }
            // From here `bytes` holds the spans written, and the batch goes on in the memory it held.
            state.spans.exchangeBytes(&bytes)
            let cut = state.ends[count - 1]
            state.ends.removeFirst(count)
            if !state.ends.isEmpty {
                // More than one export's worth (spans end while the exporter is woken): the few past it stay, in order.
                state.spans.append(encoded: bytes[cut...])
                bytes.removeSubrange(cut...)
                for index in state.ends.indices { state.ends[index] -= cut }
            }
            return (count, dropped)
        }
        guard count > 0 else {
            spare.withLock { $0 = bytes }
            return (EncodedSpans(bytes: [], count: 0), dropped)
        }
        return (EncodedSpans(bytes: bytes, count: count), dropped)
    }

    /// Gives back the bytes of spans sent: the next batch is written into them, where a new 200 KB each time was
    /// faulted in page by page.
    public func recycle(_ spans: consuming EncodedSpans) {
        var bytes = spans.bytes
        _ = consume spans
        bytes.removeAll(keepingCapacity: true)
        spare.withLock { $0 = bytes }
    }

    /// How many spans wait.
    public var count: Int { state.withLock { $0.ends.count } }

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
