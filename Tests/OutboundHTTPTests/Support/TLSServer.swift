import Foundation

/// `openssl s_server` with a freshly made self-signed certificate for `localhost`/127.0.0.1, answering HTTPS with
/// a 200 page (`-www`): a client that skipped certificate verification would get that page.
final class SelfSignedTLSServer {
    let port: Int
    private let process: Process
    private let directory: URL

    private init(port: Int, process: Process, directory: URL) {
        self.port = port
        self.process = process
        self.directory = directory
    }

    deinit {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts the server and waits (polling its output, never blocking a thread) until it accepts connections.
    static func start() async throws -> SelfSignedTLSServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbound-http-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        let output = directory.appendingPathComponent("server.out")
        guard FileManager.default.createFile(atPath: output.path, contents: nil) else {
            throw StartFailed(reason: "cannot create \(output.path)")
        }

        let request = try run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", certificate, "-days", "1",
        ])
        while request.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        guard request.terminationStatus == 0 else { throw StartFailed(reason: "openssl req exited \(request.terminationStatus)") }

        let server = try run(
            ["s_server", "-accept", "127.0.0.1:0", "-cert", certificate, "-key", key, "-www"],
            output: try FileHandle(forWritingTo: output))
        for _ in 0..<250 {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT") }),
                let port = line.split(separator: ":").last.flatMap({ Int($0) })
            {
                return SelfSignedTLSServer(port: port, process: server, directory: directory)
            }
            guard server.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        if server.isRunning { server.terminate() }
        throw StartFailed(reason: "openssl s_server did not report its port")
    }

    private static func run(_ arguments: [String], output: FileHandle? = nil) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardOutput = output ?? FileHandle.nullDevice
        process.standardError = output ?? FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    struct StartFailed: Error {
        var reason: String
    }
}
