import Foundation

/// The TLS files of a local provider peer, made with `openssl` in `directory`: a CA made for that peer alone
/// (`ca.pem`, what a client is told to trust) and a server certificate for `localhost` and 127.0.0.1 (`cert.pem`,
/// `key.pem`).
enum PeerCertificates {
    static func make(in directory: URL) async throws {
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await openssl(
            ["req", "-x509"] + newKey + ["-subj", "/CN=carbscan peer CA", "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "1"])
        try await openssl(
            ["req"] + newKey + [
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", path("key.pem"), "-out",
                path("server.csr"),
            ])
        try await openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
            "-copy_extensions", "copy", "-out", path("cert.pem"), "-days", "1",
        ])
    }

    /// Runs `openssl ARGS`, polling for its end (no cooperative thread blocks).
    static func openssl(_ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        while process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        guard process.terminationStatus == 0 else { throw ServerError("openssl \(arguments[0]) exited \(process.terminationStatus)") }
    }

    /// Starts `script` (beside this file) with the Python of `.local/venv` and waits for its `port N` line;
    /// `requirements` names the PyPI packages it imports, for the error when it does not start.
    static func startPeer(
        script: String, arguments: [String], directory: URL, requirements: String = "hypercorn and cryptography"
    ) async throws -> (port: Int, process: Process) {
        let output = directory.appendingPathComponent("peer.out")
        guard FileManager.default.createFile(atPath: output.path, contents: nil) else { throw ServerError("cannot create \(output.path)") }
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let python = TestServices.repositoryRoot.appendingPathComponent(".local/venv/bin/python3")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw ServerError("no \(python.path): ops/install.sh makes it, with \(requirements)")
        }
        let server = Process()
        server.executableURL = python
        server.arguments = [here.appendingPathComponent(script).path] + arguments
        server.standardInput = FileHandle.nullDevice
        server.standardOutput = try FileHandle(forWritingTo: output)
        server.standardError = server.standardOutput
        try server.run()
        for _ in 0..<500 {
            let words = ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(whereSeparator: \.isWhitespace)
            if words.count >= 2, words[0] == "port", let port = Int(words[1]) { return (port, server) }
            guard server.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        if server.isRunning { server.terminate() }
        let log = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        throw ServerError("\(script) did not report its port (are \(requirements) installed? ops/install.sh): \(log)")
    }
}
