/// Why a Redis call failed. `code` tells callers whether retrying can help.
public struct RedisError: Error, CustomStringConvertible, Sendable, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String { case connection, timeout, protocolError, server, closed, invalidURL, unroutable, notReplicated }
        private let value: Value
        /// The server could not be reached, or the connection broke; the command may or may not have run.
        public static let connection = Code(value: .connection)
        /// No reply within the read timeout; the connection was dropped.
        public static let timeout = Code(value: .timeout)
        /// The reply could not be parsed.
        public static let protocolError = Code(value: .protocolError)
        /// Redis answered with an error reply (`ERR`, `NOSCRIPT`, `WRONGTYPE`, …).
        public static let server = Code(value: .server)
        /// The client was shut down.
        public static let closed = Code(value: .closed)
        public static let invalidURL = Code(value: .invalidURL)
        /// A cluster cannot answer this command as asked: it names keys of several slots, or would answer for one
        /// node only (`SCAN`, `DBSIZE`). A mistake of the caller's, never retried.
        public static let unroutable = Code(value: .unroutable)
        /// A write asked to be durable was not acknowledged by enough replicas in time (`WAIT`): it was made on the
        /// master, and may yet be lost with it.
        public static let notReplicated = Code(value: .notReplicated)
        public var description: String { value.rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// True when retrying later may succeed (the server was away, not wrong).
    public var isTransient: Bool { code == .connection || code == .timeout }

    /// True when Redis is unreachable or full (`OOM`: `maxmemory` reached with `noeviction`) — a state of the server
    /// that passes, not a command that is wrong.
    public var isOutage: Bool { isTransient || isOutOfMemory || isClusterInTransition || code == .notReplicated }

    /// A cluster answering that it cannot serve the slot now (`CLUSTERDOWN` while a master fails over, `TRYAGAIN`
    /// while a slot migrates, `MASTERDOWN`, `LOADING`): a state that passes.
    public var isClusterInTransition: Bool {
        // A script's error is prefixed with its name: "enqueue: CLUSTERDOWN …".
        code == .server
            && ["CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "LOADING"].contains { message.hasPrefix($0) || message.contains(": \($0) ") }
    }

    /// `OOM command not allowed when used memory > 'maxmemory'`: a write refused until memory is freed.
    public var isOutOfMemory: Bool { code == .server && message.contains("OOM command not allowed") }

    /// `NOGROUP`: the stream or its consumer group does not exist (also when a script's call met it).
    /// The stream or its consumer group is gone: `NOGROUP`, or a blocked read ended by their deletion (`UNBLOCKED the
    /// stream key no longer exists`, `UNBLOCKED the consumer group this client was blocked on no longer exists`).
    public var isMissingGroup: Bool {
        code == .server
            && (message.contains("NOGROUP") || message.contains("UNBLOCKED the stream key no longer exists")
                || message.contains("UNBLOCKED the consumer group this client was blocked on no longer exists"))
    }

    public var description: String { "redis \(code): \(message)" }
}
