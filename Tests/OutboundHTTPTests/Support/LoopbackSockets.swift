#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A loopback TCP port that refuses connections: bound (so nothing else takes it) but never listening.
final class ClosedPort {
    let port: Int
    private let socket: LoopbackSocket

    init() throws {
        socket = try LoopbackSocket()
        port = try socket.bind()
    }
}

/// A loopback TCP port where connecting hangs: it listens with a backlog of 0 and one connection already fills its
/// accept queue, so Linux drops every further SYN and the handshake never completes.
final class StalledPort {
    let port: Int
    private let listener: LoopbackSocket
    private let filler: LoopbackSocket

    init() throws {
        listener = try LoopbackSocket()
        port = try listener.bind()
        guard listen(listener.descriptor, 0) == 0 else { throw LoopbackSocket.Failure(call: "listen") }
        filler = try LoopbackSocket()
        try filler.connect(to: port)  // loopback to a listener with room: completes at once
    }
}

final class LoopbackSocket {
    let descriptor: Int32

    init() throws {
        #if canImport(Glibc)
            descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            descriptor = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(call: "socket") }
    }

    deinit {
        close(descriptor)
    }

    /// Binds to 127.0.0.1 on an ephemeral port and returns the port.
    func bind() throws -> Int {
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                #if canImport(Glibc)
                    Glibc.bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
                #else
                    Darwin.bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
                #endif
            }
        }
        guard bound else { throw Failure(call: "bind") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func connect(to port: Int) throws {
        var address = Self.loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                #if canImport(Glibc)
                    Glibc.connect(descriptor, pointer, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                #else
                    Darwin.connect(descriptor, pointer, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                #endif
            }
        }
        guard connected else { throw Failure(call: "connect") }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    struct Failure: Error {
        var call: String
    }
}
