import CCurl
import Durations
import Foundation
import Logging
import Synchronization

/// A request on its way: made before the caller waits and immutable, so that the caller's async frames, kept while
/// it waits (thousands of AI calls at once), hold one reference to it rather than copies of its parts.
final class OutboundCall: Sendable {
    let id: UInt64
    let request: HTTPRequest
    let host: String
    /// An `https` URL: the only kind that may be carried over HTTP/2.
    let tls: Bool
    let connectTimeout: Duration?
    let totalTimeout: Duration?
    /// Where the body goes as it arrives (``HTTPClient/stream(_:connectTimeout:totalTimeout:)``); nil: it is
    /// collected and returned whole.
    let sink: BodySink?
    let started = ContinuousClock.now

    init(
        id: UInt64, request: HTTPRequest, host: String, tls: Bool, connectTimeout: Duration?, totalTimeout: Duration?,
        sink: BodySink? = nil
    ) {
        self.id = id
        self.request = request
        self.host = host
        self.tls = tls
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.sink = sink
    }
}

/// A call handed to the client thread, not yet attached to an easy handle.
struct PendingRequest: Sendable {
    let call: OutboundCall
    let continuation: CheckedContinuation<Result<HTTPResponse, HTTPClientError>, Never>

    var id: UInt64 { call.id }
    var request: HTTPRequest { call.request }
    var host: String { call.host }
}

/// libcurl's process-wide set-up, run once before the first handle is made (a lazy global is initialised once,
/// thread-safely).
private let curlGlobalInit: Bool = carbscan_curl_global_init_default() == CURLE_OK

/// The libcurl multi handles shared between the owner thread and the tasks that wake it.
// @unchecked Sendable: only the owner thread calls libcurl with them, the cleanup included.
private struct MultiHandles: @unchecked Sendable {
    let pointers: [UnsafeMutableRawPointer]
}

/// libcurl multi handles driven by one dedicated OS thread, so transfers never block Swift's cooperative pool.
/// The thread runs libcurl's multi socket API over an epoll set (`SocketEvents`). Callers queue requests and
/// cancellations under a mutex and wake the thread through the set; every easy handle is created, driven and freed
/// on the thread.
///
/// More than one multi handle when the per-host limit allows thousands of connections: libcurl 7.88 walks every
/// connection of a multi handle's cache when a transfer looks for one to reuse (all of the host's), when a transfer
/// is removed (all of them, for connect-only ones to close) and, once fewer transfers remain than a quarter of the
/// cached connections, for the oldest idle one. With 10,000 HTTP/1.1 calls held to one model those walks were 23% of
/// a worker's CPU (`ops/bench/slow-provider.sh` under perf, 2026-11-26). Each multi handle has a cache of its own;
/// a transfer goes to the one with the fewest transfers.
final class CurlMultiThread: Sendable {
    private struct State {
        var lastID: UInt64 = 0
        var added: [PendingRequest] = []
        var cancelled: [UInt64] = []
        /// Once set, nothing is queued and the multi handle is not woken again: the thread is free to clean it up.
        var closed = false
    }

    private static let shutDown = "the HTTP client was shut down"
    private static let cancelled = "cancelled"
    private static let queuedTooLong = "the total timeout passed while waiting for a connection"
    private static let overdueMargin = Duration.milliseconds(20)

    /// Connections a multi handle's cache is sized for before the client adds another multi handle.
    static let connectionsPerCache = 512
    /// The most multi handles one client drives.
    static let maxCaches = 16

    private let state = Mutex(State())
    private let multis: MultiHandles
    private let events = SocketEvents()
    private let options: HTTPClientOptions
    private let logger: Logger

    /// How many multi handles (connection caches) a client with these options drives: one per
    /// ``connectionsPerCache`` connections its per-host limit allows (no limit: the most), at least one.
    static func cacheCount(_ options: HTTPClientOptions) -> Int {
        guard options.maxConnectionsPerHost > 0 else { return maxCaches }
        return min(maxCaches, max(1, options.maxConnectionsPerHost / connectionsPerCache))
    }

    init(name: String, options: HTTPClientOptions, logger: Logger) {
        precondition(curlGlobalInit, "curl_global_init failed")
        let count = Self.cacheCount(options)
        // The per-host limit is shared out: together the caches open at most count - 1 more than it allows.
        let perCache = options.maxConnectionsPerHost == 0 ? 0 : (options.maxConnectionsPerHost + count - 1) / count
        var pointers: [UnsafeMutableRawPointer] = []
        for _ in 0..<count {
            guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed") }
            // HTTP/2 requests to one host share a connection as concurrent streams (PIPEWAIT on each transfer makes
            // a new one wait for a connection being set up rather than open its own). CURLMOPT_MAXCONNECTS stays at
            // libcurl's default, 4 × the transfers added: the cache counts busy connections too, so a fixed size
            // below the connections in use would close each HTTP/1.1 connection as its transfer ends, a new TCP
            // (and TLS) handshake per request under load.
            _ = carbscan_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
            _ = carbscan_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, perCache)
            _ = carbscan_curl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, options.maxStreamsPerConnection)
            precondition(events.install(on: multi) == pointers.count, "multi handles are installed in order")
            pointers.append(multi)
        }
        self.multis = MultiHandles(pointers: pointers)
        self.options = options
        self.logger = logger
        let thread = Thread { [self] in self.run() }
        thread.name = name
        thread.start()
    }

    /// A call to submit, with an id of its own.
    func call(
        _ request: HTTPRequest, host: String, tls: Bool, connectTimeout: Duration?, totalTimeout: Duration?, sink: BodySink? = nil
    ) -> OutboundCall {
        let id = state.withLock { state in
            state.lastID += 1
            return state.lastID
        }
        return OutboundCall(
            id: id, request: request, host: host, tls: tls, connectTimeout: connectTimeout, totalTimeout: totalTimeout, sink: sink)
    }

    /// Waits for the call's response (a streamed call's: its status and headers, the body going to its sink). The closures capture the call and the thread only: their frames are kept for
    /// as long as the call waits.
    func submit(_ call: OutboundCall) async -> Result<HTTPResponse, HTTPClientError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in self.enqueue(PendingRequest(call: call, continuation: continuation)) }
        } onCancel: {
            self.cancel(call.id)
        }
    }

    private func enqueue(_ pending: PendingRequest) {
        // Checked under the lock the cancellation handler takes: a cancellation either sees this request queued or
        // happened before, and then `Task.isCancelled` is already true here.
        let refusal: HTTPClientError? = state.withLock { state in
            if state.closed { return HTTPClientError(.shutdown, pending.request.method, pending.host, Self.shutDown) }
            if Task.isCancelled { return HTTPClientError(.cancelled, pending.request.method, pending.host, Self.cancelled) }
            state.added.append(pending)
            events.wake()
            return nil
        }
        if let refusal { pending.continuation.resume(returning: .failure(refusal)) }
    }

    /// Aborts the call if it is queued or running; its caller gets ``HTTPClientError/Code/cancelled``.
    func cancel(_ id: UInt64) {
        state.withLock { state in
            guard !state.closed else { return }
            state.cancelled.append(id)
            events.wake()
        }
    }

    /// Fails every queued and running request with `.shutdown` and ends the thread; idempotent.
    func shutdown() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            events.wake()
        }
    }

    private func run() {
        var running = RunningTransfers(multis: multis.pointers.count)
        var nextOverdueCheck = ContinuousClock.now + .seconds(10)
        while true {
            let (added, cancelled, closed) = state.withLock { state in
                defer {
                    state.added.removeAll()
                    state.cancelled.removeAll()
                }
                return (state.added, state.cancelled, state.closed)
            }
            if closed {
                for pending in added {
                    pending.continuation.resume(
                        returning: .failure(HTTPClientError(.shutdown, pending.request.method, pending.host, Self.shutDown)))
                }
                for transfer in running.all {
                    finish(transfer, .failure(HTTPClientError(.shutdown, transfer.method, transfer.host, Self.shutDown)))
                }
                break
            }

            let cancelledIDs = Set(cancelled)
            for pending in added {
                if cancelledIDs.contains(pending.id) {
                    pending.continuation.resume(
                        returning: .failure(HTTPClientError(.cancelled, pending.request.method, pending.host, Self.cancelled)))
                    continue
                }
                do {
                    let multi = running.leastLoadedMulti
                    let transfer = try Transfer(pending, multi: multi, options: options)
                    let code = curl_multi_add_handle(multis.pointers[multi], transfer.easy)
                    guard code == CURLM_OK else {
                        let detail = String(cString: curl_multi_strerror(code))
                        transfer.resume(with: .failure(HTTPClientError(.transport, transfer.method, transfer.host, detail)))
                        transfer.close()
                        continue
                    }
                    running.add(transfer)
                    nextOverdueCheck = min(nextOverdueCheck, transfer.deadline + Self.overdueMargin)
                } catch {
                    pending.continuation.resume(returning: .failure(error))
                }
            }
            // An id not found finished before its cancellation arrived: its caller already has the answer.
            for id in cancelled {
                guard let transfer = running.remove(id: id) else { continue }
                finish(transfer, .failure(HTTPClientError(.cancelled, transfer.method, transfer.host, Self.cancelled)))
            }

            var stillRunning: Int32 = 0
            for multi in events.expiredTimers { _ = curl_multi_socket_action(multis.pointers[multi], CURL_SOCKET_BAD, 0, &stillRunning) }
            finishDone(&running)

            // libcurl (7.88) checks a transfer's total timeout only once the transfer has a connection: one queued
            // behind maxConnectionsPerHost (or waiting to multiplex) would fail only when a connection frees up, however
            // late. Still here a little past its deadline, a transfer is such a one; the margin leaves every other
            // timeout to libcurl. The pass over every transfer runs only when the earliest deadline has come.
            let now = ContinuousClock.now
            if nextOverdueCheck <= now {
                nextOverdueCheck = now + .seconds(10)
                var overdue: [Transfer] = []
                for transfer in running.all {
                    let due = transfer.deadline + Self.overdueMargin
                    if due <= now { overdue.append(transfer) } else { nextOverdueCheck = min(nextOverdueCheck, due) }
                }
                for transfer in overdue {
                    running.remove(transfer)
                    finish(transfer, .failure(HTTPClientError(.timeout, transfer.method, transfer.host, Self.queuedTooLong)))
                }
            }
            // Returns on a ready socket, a wake-up, libcurl's timer or the next overdue check, whichever comes first.
            events.wait(until: nextOverdueCheck) { multi, socket, bits in
                _ = curl_multi_socket_action(multis.pointers[multi], socket, bits, &stillRunning)
            }
            finishDone(&running)
        }
        for multi in multis.pointers { curl_multi_cleanup(multi) }
    }

    /// Ends the transfers libcurl reports done. Every message is read before any handle is removed: removing a handle
    /// walks the messages still queued, so removing as they are read cost a pass over the rest for each one.
    private func finishDone(_ running: inout RunningTransfers) {
        var done: [(Transfer, CURLcode)] = []
        var queued: Int32 = 0
        for multi in multis.pointers {
            while let message = curl_multi_info_read(multi, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                    let transfer = running.remove(easy: easy)
                else { continue }
                done.append((transfer, message.pointee.data.result))
            }
        }
        for (transfer, code) in done { finish(transfer, transfer.result(code)) }
    }

    private func finish(_ transfer: Transfer, _ result: Result<HTTPResponse, HTTPClientError>) {
        _ = curl_multi_remove_handle(multis.pointers[transfer.multi], transfer.easy)
        transfer.resume(with: result)
        transfer.close()
        if logger.logLevel <= .debug {
            let elapsed = ContinuousClock.now - transfer.started
            var metadata: Logger.Metadata = [
                "http.method": "\(transfer.method.rawValue)", "http.host": "\(transfer.host)", "elapsed": "\(elapsed)",
            ]
            switch result {
            case .success(let response): metadata["http.status"] = "\(response.status)"
            case .failure(let error): metadata["error"] = "\(error)"
            }
            logger.debug("http request finished", metadata: metadata)
        }
    }
}

/// The transfers the client's thread drives, by easy handle and by request id, and how many each multi handle has.
private struct RunningTransfers {
    private var byHandle: [UnsafeMutableRawPointer: Transfer] = [:]
    private var handles: [UInt64: UnsafeMutableRawPointer] = [:]
    private var load: [Int]

    init(multis: Int) { load = [Int](repeating: 0, count: multis) }

    var all: Dictionary<UnsafeMutableRawPointer, Transfer>.Values { byHandle.values }
    /// Where a new transfer goes: the multi handle with the fewest (the first of those).
    var leastLoadedMulti: Int { load.indices.min { load[$0] < load[$1] } ?? 0 }

    mutating func add(_ transfer: Transfer) {
        byHandle[transfer.easy] = transfer
        handles[transfer.id] = transfer.easy
        load[transfer.multi] += 1
    }

    mutating func remove(_ transfer: Transfer) { _ = remove(easy: transfer.easy) }

    mutating func remove(id: UInt64) -> Transfer? { handles[id].flatMap { remove(easy: $0) } }

    mutating func remove(easy: UnsafeMutableRawPointer) -> Transfer? {
        guard let transfer = byHandle.removeValue(forKey: easy) else { return nil }
        handles.removeValue(forKey: transfer.id)
        load[transfer.multi] -= 1
        return transfer
    }
}
