import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on a free loopback port in front of a real server (Redis, Postgres), for fault tests: `cut()` drops
/// every connection and refuses new ones until `restore()`, which is how an outage of that server looks to its
/// clients, without stopping the server other tests share.
public final class FaultProxy: Sendable {
    public let port: Int
    private let state: Mutex<State>
    private let server: any Channel

    private struct State {
        var upstream: (host: String, port: Int)
        var down = false
        var open: [ObjectIdentifier: any Channel] = [:]
    }

    public var url: String { "127.0.0.1:\(port)" }

    /// Starts forwarding to `host:port`.
    public static func start(to host: String, port: Int) async throws -> FaultProxy {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: true)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let proxy = FaultProxy(port: server.channel.localAddress?.port ?? 0, upstream: (host, port), server: server.channel)
        Task {
            try? await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { inbound in
                    for try await client in inbound {
                        group.addTask { await proxy.serve(client) }
                    }
                }
            }
        }
        return proxy
    }

    private init(port: Int, upstream: (host: String, port: Int), server: any Channel) {
        self.port = port
        self.state = Mutex(State(upstream: upstream))
        self.server = server
    }

    /// Drops every open connection; new ones are closed as soon as they are accepted.
    public func cut() {
        let open = state.withLock { state in
            state.down = true
            defer { state.open.removeAll() }
            return Array(state.open.values)
        }
        for channel in open { channel.close(promise: nil) }
    }

    /// Forwards new connections again.
    public func restore() { state.withLock { $0.down = false } }

    public func stop() {
        cut()
        server.close(promise: nil)
    }

    private func serve(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        guard let upstream = state.withLock({ $0.down ? nil : $0.upstream }),
            let server = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(
                host: upstream.host, port: upstream.port,
                channelInitializer: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                })
        else {
            try? await client.channel.close()
            return
        }
        let registered = state.withLock { state -> Bool in
            if state.down { return false }
            state.open[ObjectIdentifier(client.channel)] = client.channel
            state.open[ObjectIdentifier(server.channel)] = server.channel
            return true
        }
        guard registered else {
            try? await client.channel.close()
            try? await server.channel.close()
            return
        }
        try? await client.executeThenClose { clientIn, clientOut in
            try await server.executeThenClose { serverIn, serverOut in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { for try await bytes in clientIn { try await serverOut.write(bytes) } }
                    group.addTask { for try await bytes in serverIn { try await clientOut.write(bytes) } }
                    // Either side closing ends both.
                    _ = try await group.next()
                    group.cancelAll()
                }
            }
        }
        state.withLock { state in
            state.open[ObjectIdentifier(client.channel)] = nil
            state.open[ObjectIdentifier(server.channel)] = nil
        }
    }
}
