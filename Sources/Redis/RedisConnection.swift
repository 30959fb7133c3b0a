import CHiredis
import Foundation

/// One hiredis connection. Every call blocks, so an instance lives on exactly one thread (a `ConnectionThread`);
/// it is deliberately not `Sendable`, so the compiler keeps it there.
final class RedisConnection {
    private var context: UnsafeMutablePointer<redisContext>?
    let configuration: RedisConfiguration
    /// `CLIENT ID`, used to interrupt a blocking command from another connection (`CLIENT UNBLOCK`).
    private(set) var clientID: Int = 0
    /// The commands of the pipeline being sent, already encoded (reused: no allocation per call once warm).
    private var output: [UInt8] = []
    private static let keptOutputBytes = 1 << 20

    init(configuration: RedisConfiguration) {
        self.configuration = configuration
    }

    deinit { close() }

    var isConnected: Bool { context != nil }

    func connect() throws(RedisError) {
        close()
        let ctx = redisConnectWithTimeout(configuration.host, Int32(configuration.port), Self.timeval(configuration.connectTimeout))
        guard let ctx else { throw RedisError(.connection, "cannot allocate a connection") }
        if ctx.pointee.err != 0 {
            let message = Self.errorString(ctx)
            redisFree(ctx)
            throw RedisError(.connection, "connect to \(configuration.displayAddress): \(message)")
        }
        context = ctx
        _ = redisEnableKeepAlive(ctx)
        setReadTimeout(configuration.readTimeout)
        if let password = configuration.password {
            let auth = configuration.username.map { ["AUTH", $0, password] } ?? ["AUTH", password]
            if case .error(let e) = try command(auth) {
                close()
                throw RedisError(.connection, "authentication failed: \(e)")
            }
        }
        if configuration.database != 0, case .error(let e) = try command(["SELECT", String(configuration.database)]) {
            close()
            throw RedisError(.connection, "SELECT \(configuration.database): \(e)")
        }
        clientID = try command(["CLIENT", "ID"]).int ?? 0
    }

    func close() {
        if let context { redisFree(context) }
        context = nil
    }

    /// Sets how long a reply may take. Blocking commands raise it for their own duration.
    func setReadTimeout(_ timeout: Duration) {
        guard let context else { return }
        _ = redisSetTimeout(context, Self.timeval(timeout))
    }

    /// Sends one command and reads its reply. An error reply is returned as `.error`, not thrown:
    /// only connection-level failures throw (and drop the connection).
    func command(_ arguments: [String]) throws(RedisError) -> RedisValue {
        try pipeline([arguments])[0]
    }

    /// Writes all commands in one go, then reads every reply: one round-trip for the batch.
    func pipeline(_ commands: [[String]]) throws(RedisError) -> [RedisValue] {
        guard let context else { throw RedisError(.connection, "not connected") }
        output.removeAll(keepingCapacity: true)
        for (index, arguments) in commands.enumerated() {
            RESP.encode(arguments, into: &output)
            // A long pipeline goes out as it is formatted: Redis works on the first commands meanwhile.
            if index % 256 == 255 {
                try hand(output, to: context)
                output.removeAll(keepingCapacity: true)
                try flush(context)
            }
        }
        if !output.isEmpty { try hand(output, to: context) }
        // A rare huge pipeline (a large value) does not keep its buffer for the connection's lifetime.
        if output.capacity > Self.keptOutputBytes { output = [] }
        var replies: [RedisValue] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var raw: UnsafeMutableRawPointer?
            if redisGetReply(context, &raw) != REDIS_OK || raw == nil { throw fail(context) }
            let reply = raw!.assumingMemoryBound(to: redisReply.self)
            replies.append(Self.convert(reply))
            freeReplyObject(raw)
        }
        return replies
    }

    /// Commands already in the protocol's form go to hiredis's output buffer as they are
    /// (`redisAppendFormattedCommand`); hiredis still does the writing and the reading.
    private func hand(_ bytes: [UInt8], to context: UnsafeMutablePointer<redisContext>) throws(RedisError) {
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { redisAppendFormattedCommand(context, $0.baseAddress, $0.count) }
        }
        if status != REDIS_OK { throw fail(context) }
    }

    /// Writes everything formatted so far (blocking until the socket took it).
    private func flush(_ context: UnsafeMutablePointer<redisContext>) throws(RedisError) {
        var done: Int32 = 0
        repeat {
            if redisBufferWrite(context, &done) != REDIS_OK { throw fail(context) }
        } while done == 0
    }

    /// Reads one more reply without sending anything: the next message of a subscription.
    func readReply() throws(RedisError) -> RedisValue {
        guard let context else { throw RedisError(.connection, "not connected") }
        var raw: UnsafeMutableRawPointer?
        if redisGetReply(context, &raw) != REDIS_OK || raw == nil { throw fail(context) }
        defer { freeReplyObject(raw) }
        return Self.convert(raw!.assumingMemoryBound(to: redisReply.self))
    }

    /// Records why the connection broke, then drops it so the next use reconnects.
    private func fail(_ context: UnsafeMutablePointer<redisContext>) -> RedisError {
        let err = context.pointee.err
        let text = Self.errorString(context)
        close()
        if err == REDIS_ERR_IO, errno == EAGAIN || errno == EWOULDBLOCK || text.contains("temporarily unavailable") {
            return RedisError(.timeout, "no reply from \(configuration.displayAddress) within the read timeout")
        }
        if err == REDIS_ERR_PROTOCOL { return RedisError(.protocolError, text) }
        return RedisError(.connection, "\(configuration.displayAddress): \(text.isEmpty ? "connection lost" : text)")
    }

    private static func convert(_ reply: UnsafeMutablePointer<redisReply>) -> RedisValue {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STRING: return .bulk(text(r.str, r.len))
        case REDIS_REPLY_STATUS: return .status(text(r.str, r.len))
        case REDIS_REPLY_ERROR: return .error(text(r.str, r.len))
        case REDIS_REPLY_INTEGER: return .integer(Int(r.integer))
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_ARRAY:
            var items = [RedisValue]()
            items.reserveCapacity(r.elements)
            for i in 0..<r.elements {
                if let element = r.element[i] { items.append(convert(element)) } else { items.append(.null) }
            }
            return .array(items)
        default: return .null
        }
    }

    private static func text(_ pointer: UnsafeMutablePointer<CChar>?, _ length: Int) -> String {
        guard let pointer, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    private static func errorString(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    static func timeval(_ duration: Duration) -> Glibc.timeval {
        let (seconds, attoseconds) = duration.components
        return Glibc.timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}
