import Logging
import Synchronization

/// A dedicated connection (and thread) for blocking commands. On a cluster it connects to the node of its command's
/// keys (any node for a keyless one, such as `SUBSCRIBE`), moves when the slot does (`MOVED`), and sends `ASKING`
/// first when told to (`ASK`).
public final class BlockingConnection: Sendable {
    private struct Current {
        var node: RedisEndpoint
        var thread: ConnectionThread
    }

    private let name: String
    private let pool: RedisClient
    private let logger: Logger
    private let current = Mutex<Current?>(nil)

    init(name: String, pool: RedisClient, logger: Logger) {
        self.name = name
        self.pool = pool
        self.logger = logger
    }

    deinit { close() }

    /// Sends a command that may block on the server for up to `blockFor`.
    public func send(_ arguments: [String], blockFor: Duration) async throws -> RedisValue {
        var node = try await pool.node(for: arguments, current: current.withLock { $0?.node })
        var asking = false
        for _ in 0..<5 {
            let reply: RedisValue
            do {
                reply = try await thread(for: node).submit(asking ? [["ASKING"], arguments] : [arguments], blockFor: blockFor).last!
            } catch let error as RedisError where error.isTransient {
                // The node may be gone (failed over): the next command picks its node afresh.
                pool.noteUnreachable()
                drop()
                throw error
            }
            guard case .error(let message) = reply else { return reply }
            guard let redirection = Redirection(message, defaultHost: pool.configuration.host) else {
                throw RedisError(.server, message)
            }
            try await pool.noteRedirection(redirection)
            node = redirection.node
            asking = redirection.kind == .ask
        }
        throw RedisError(.server, "redirected more than 5 times: \(arguments.first ?? "")")
    }

    /// Waits up to `timeout` for the next message pushed to this connection (after `SUBSCRIBE`).
    /// A timeout throws `.timeout` and drops the connection (and with it the subscription).
    public func receive(timeout: Duration) async throws -> RedisValue {
        guard let thread = current.withLock({ $0?.thread }) else { throw RedisError(.connection, "nothing subscribed yet") }
        do {
            return try await thread.submit([], blockFor: timeout)[0]
        } catch let error as RedisError where error.code == .connection {
            pool.noteUnreachable()
            drop()
            throw error
        }
    }

    /// This connection's `CLIENT ID` on its server (0 before it first connects).
    public var clientID: Int { current.withLock { $0?.thread.clientID } ?? 0 }

    /// Ends a command blocked on the server now (it returns its timeout reply), through the pool. A command not yet
    /// blocked on the server is not affected.
    public func unblock() async {
        guard let (node, id) = serverSide() else { return }
        _ = try? await pool.send(["CLIENT", "UNBLOCK", String(id)], to: node)
    }

    /// Closes this connection on the server (`CLIENT KILL ID`, through the pool), so a read waiting for a pushed
    /// message (a subscriber's) fails now instead of at its timeout: how a subscriber is stopped at shutdown.
    public func disconnect() async {
        guard let (node, id) = serverSide() else { return }
        _ = try? await pool.send(["CLIENT", "KILL", "ID", String(id)], to: node)
    }

    public func close() { drop() }

    private func serverSide() -> (RedisEndpoint, Int)? {
        guard let current = current.withLock({ $0 }), case let id = current.thread.clientID, id != 0 else { return nil }
        return (current.node, id)
    }

    /// The connection to `node`: this one, or a new one when the command's node is another.
    private func thread(for node: RedisEndpoint) -> ConnectionThread {
        current.withLock { current in
            if let current, current.node == node { return current.thread }
            current?.thread.close()
            let thread = ConnectionThread(name: name, configuration: pool.configuration.at(node), logger: logger)
            current = Current(node: node, thread: thread)
            return thread
        }
    }

    private func drop() {
        current.withLock { current in
            current?.thread.close()
            current = nil
        }
    }
}
