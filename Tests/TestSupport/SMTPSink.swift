import Foundation

/// A real SMTP server on a free loopback port (aiosmtpd, from PyPI, run by `smtp_sink.py` beside this file with the
/// Python of `.local/venv`, where `ops/install.sh` installs it) that keeps every message it accepts; a recipient named
/// `reject@…` is refused with 550.
public struct SMTPSink: Sendable {
    public let port: Int
    let directory: URL
    let pid: Int32

    public var url: String { "smtp://127.0.0.1:\(port)" }

    public static func start() throws -> SMTPSink {
        let port = PrivateRedis.freeLoopbackPort()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("smtp-sink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let script = here.appendingPathComponent("smtp_sink.py")
        let python = here.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".local/venv/bin/python3")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw ServerError("no \(python.path): ops/install.sh makes it, with aiosmtpd")
        }
        let process = Process()
        process.executableURL = python
        process.arguments = [script.path, String(port), directory.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let sink = SMTPSink(port: port, directory: directory, pid: process.processIdentifier)
        guard PrivateRedis(port: port, pid: process.processIdentifier).waitUntilListening() else {
            sink.stop()
            throw ServerError("the SMTP sink did not start (is aiosmtpd installed? ops/install.sh installs it)")
        }
        return sink
    }

    /// The messages received so far, raw (envelope lines first), oldest first.
    public func messages() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: [.creationDateKey])) ?? []
        return files.filter { $0.pathExtension == "eml" }
            .sorted {
                (try? $0.resourceValues(forKeys: [.creationDateKey]).creationDate ?? .distantPast) ?? .distantPast
                    < (try? $1.resourceValues(forKeys: [.creationDateKey]).creationDate ?? .distantPast) ?? .distantPast
            }
            .compactMap { try? String(contentsOf: $0, encoding: .utf8) }
    }

    public func stop() {
        kill(pid, SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }
}
