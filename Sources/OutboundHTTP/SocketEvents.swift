import CCurl
import Foundation

/// The sockets libcurl asks to watch, in one epoll set, and the times it asks to be called back: the state behind
/// libcurl's multi socket API (`curl_multi_socket_action`), for one or more multi handles driven by one thread.
///
/// `curl_multi_perform` and `curl_multi_poll`, which the client used before, walk every transfer on each call; with
/// the socket API each wake-up touches only the sockets that are ready and the transfers whose timer is due. 10,000
/// requests held over HTTP/2 cost the client 0.80 and 0.83 of the CPU they did; over HTTP/1.1, and for a worker's
/// chats against a 1 s model, no difference showed (`ops/bench/http-inflight.sh` and `slow-provider.sh`, 2026-11-26).
///
/// Lives on the client's thread; only `wake()` is called from other threads (a write to an eventfd).
final class SocketEvents: @unchecked Sendable {
    /// What libcurl's callbacks get as their context: which multi handle they speak for.
    private final class Registration {
        unowned let events: SocketEvents
        let multi: Int

        init(_ events: SocketEvents, multi: Int) {
            self.events = events
            self.multi = multi
        }
    }

    private let epoll: Int32
    private let wakeDescriptor: Int32
    /// The epoll data of the wake-up descriptor; a socket's is its multi handle's index (high half) and the socket.
    private static let wakeTag = UInt64.max
    private var registrations: [Registration] = []
    /// By multi handle: when libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`; nil: no timer set.
    private var timers: [ContinuousClock.Instant?] = []
    private var events = [epoll_event](repeating: epoll_event(), count: 512)

    init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeDescriptor = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        precondition(epoll >= 0 && wakeDescriptor >= 0, "epoll_create1 or eventfd failed: errno \(errno)")
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: Self.wakeTag))
        precondition(epoll_ctl(epoll, EPOLL_CTL_ADD, wakeDescriptor, &event) == 0, "epoll_ctl failed: errno \(errno)")
    }

    deinit {
        close(epoll)
        close(wakeDescriptor)
    }

    /// Makes the next (or current) `wait` return; callable from any thread.
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// Hands libcurl's callbacks of `multi` to this set; returns the index `wait` and `expiredTimers` name it by.
    func install(on multi: UnsafeMutableRawPointer) -> Int {
        let registration = Registration(self, multi: registrations.count)
        registrations.append(registration)
        timers.append(nil)
        let context = Unmanaged.passUnretained(registration).toOpaque()
        _ = carbscan_curl_multi_setopt_socket_callback(multi) { _, socket, what, context, _ in
            let registration = Unmanaged<Registration>.fromOpaque(context!).takeUnretainedValue()
            registration.events.watch(socket, what, multi: registration.multi)
            return 0
        }
        _ = carbscan_curl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
        _ = carbscan_curl_multi_setopt_timer_callback(multi) { _, milliseconds, context in
            let registration = Unmanaged<Registration>.fromOpaque(context!).takeUnretainedValue()
            registration.events.timers[registration.multi] = milliseconds < 0 ? nil : ContinuousClock.now + .milliseconds(milliseconds)
            return 0
        }
        _ = carbscan_curl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
        return registration.multi
    }

    /// libcurl's socket callback: watch `socket` for what it says, or stop watching it.
    private func watch(_ socket: curl_socket_t, _ what: Int32, multi: Int) {
        if what == CURL_POLL_REMOVE {
            // The socket may already be closed (EBADF), which removed it from the set.
            _ = epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil)
            return
        }
        var mask: UInt32 = 0
        if what & CURL_POLL_IN != 0 { mask |= EPOLLIN.rawValue }
        if what & CURL_POLL_OUT != 0 { mask |= EPOLLOUT.rawValue }
        let tag = UInt64(multi) << 32 | UInt64(UInt32(bitPattern: socket))
        var event = epoll_event(events: mask, data: epoll_data_t(u64: tag))
        if epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event) != 0 && errno == ENOENT {
            _ = epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event)
        }
    }

    /// Waits until a watched socket is ready, `wake()` is called, or `deadline` (or a libcurl timer) passes, and calls
    /// `ready` with each ready socket, the index of its multi handle and libcurl's `CURL_CSELECT_*` bits for it.
    func wait(until deadline: ContinuousClock.Instant, _ ready: (_ multi: Int, curl_socket_t, Int32) -> Void) {
        var until = deadline
        for case let due? in timers { until = min(until, due) }
        let timeout = Int32(clamping: max(0, (until - ContinuousClock.now).millisecondsRoundedUp))
        let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), timeout) }
        for index in 0..<max(0, Int(count)) {
            let event = events[index]
            if event.data.u64 == Self.wakeTag {
                var value: UInt64 = 0
                _ = read(wakeDescriptor, &value, MemoryLayout<UInt64>.size)
                continue
            }
            var bits: Int32 = 0
            if event.events & EPOLLIN.rawValue != 0 { bits |= CURL_CSELECT_IN }
            if event.events & EPOLLOUT.rawValue != 0 { bits |= CURL_CSELECT_OUT }
            if event.events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { bits |= CURL_CSELECT_ERR }
            ready(Int(event.data.u64 >> 32), curl_socket_t(truncatingIfNeeded: event.data.u64 & 0xFFFF_FFFF), bits)
        }
    }

    /// The multi handles whose libcurl timer has passed (each then wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`).
    var expiredTimers: [Int] {
        let now = ContinuousClock.now
        return timers.indices.filter { timers[$0].map { $0 <= now } ?? false }
    }
}
