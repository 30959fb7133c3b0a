import Foundation
import OutboundHTTP

/// A real HTTP/2 server (Hypercorn, from PyPI, run by `h2_peer.py` beside this file): HTTPS on one port with ALPN
/// offering h2 and http/1.1, as the OpenAI API does, and cleartext HTTP/1.1 on another. Its certificate is issued by
/// a CA made for this peer alone (`caBundlePath`), so a client trusts it only through ``HTTPClientOptions/caBundlePath``.
///
/// - `/info?ms=&until=`: answers once `until` requests have been in flight together (at most 20 s) and `ms` more
///   have passed, with JSON naming the HTTP version and the client's port (its connection).
/// - `/stats`: the most `/info` requests in flight at once, every client port `/info` saw, and how many `/events`
///   responses were written to their end.
/// - `/events?n=`: server-sent events `data: 1`, then nothing until `/release` (at most 20 s), then `data: 2` to `n`.
final class H2Peer {
    struct Info: Decodable {
        var httpVersion: String
        var clientPort: Int
    }

    struct Stats: Decodable {
        var maxInFlight: Int
        var ports: [Int]
        var eventsFinished: Int
    }

    /// The peer's JSON, snake_case keys and all.
    static func decode<T: Decodable>(_ type: T.Type, from response: HTTPResponse) throws -> T {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(type, from: Data(response.body))
    }

    let tlsPort: Int
    let clearPort: Int
    let caBundlePath: String
    private let process: Process
    private let directory: URL

    private init(tlsPort: Int, clearPort: Int, process: Process, directory: URL) {
        self.tlsPort = tlsPort
        self.clearPort = clearPort
        self.caBundlePath = directory.appendingPathComponent("ca.pem").path
        self.process = process
        self.directory = directory
    }

    deinit {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// `https://localhost:…`: the name the certificate is issued for.
    func tlsURL(_ path: String) -> String { "https://localhost:\(tlsPort)\(path)" }
    func clearURL(_ path: String) -> String { "http://127.0.0.1:\(clearPort)\(path)" }

    func stats(_ client: HTTPClient) async throws -> Stats {
        try Self.decode(Stats.self, from: try await client.send(HTTPRequest(url: clearURL("/stats"))))
    }

    /// Makes the CA and the server's certificate, starts the server and waits (polling, never blocking a thread)
    /// until it listens.
    /// - Parameter maxStreams: the `SETTINGS_MAX_CONCURRENT_STREAMS` the server announces.
    static func start(maxStreams: Int = 100) async throws -> H2Peer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbound-http-h2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await openssl(
            ["req", "-x509"] + newKey + ["-subj", "/CN=carbscan test CA", "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "1"])
        try await openssl(
            ["req"] + newKey + [
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", path("key.pem"), "-out",
                path("server.csr"),
            ])
        try await openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
            "-copy_extensions", "copy", "-out", path("cert.pem"), "-days", "1",
        ])

        let output = directory.appendingPathComponent("server.out")
        guard FileManager.default.createFile(atPath: output.path, contents: nil) else {
            throw StartFailed(reason: "cannot create \(output.path)")
        }
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let script = here.appendingPathComponent("h2_peer.py").path
        // hypercorn is in the Python tools' virtual environment that ops/install.sh makes.
        let python = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".local/venv/bin/python3")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw StartFailed(reason: "no \(python.path): ops/install.sh makes it, with hypercorn")
        }
        let server = Process()
        server.executableURL = python
        server.arguments = [script, path("cert.pem"), path("key.pem"), String(maxStreams)]
        server.standardInput = FileHandle.nullDevice
        server.standardOutput = try FileHandle(forWritingTo: output)
        server.standardError = server.standardOutput
        try server.run()
        for _ in 0..<500 {
            let words = ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(whereSeparator: \.isWhitespace)
            if words.count >= 3, words[0] == "ports", let tls = Int(words[1]), let clear = Int(words[2]) {
                return H2Peer(tlsPort: tls, clearPort: clear, process: server, directory: directory)
            }
            guard server.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        if server.isRunning { server.terminate() }
        let log = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        throw StartFailed(reason: "h2_peer.py did not report its ports (is hypercorn installed? ops/install.sh installs it): \(log)")
    }

    private static func openssl(_ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        while process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        guard process.terminationStatus == 0 else {
            throw StartFailed(reason: "openssl \(arguments[0]) exited \(process.terminationStatus)")
        }
    }

    struct StartFailed: Error {
        var reason: String
    }
}
