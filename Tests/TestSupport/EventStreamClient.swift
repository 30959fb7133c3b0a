import Foundation
import Synchronization

/// A server-sent events client for tests: `curl -N` (a real HTTP client, which de-chunks and never buffers), its
/// output read as it arrives and parsed as the WHATWG format (events split on blank lines, comments kept apart).
public final class EventStreamClient: Sendable {
    public struct Event: Sendable, Equatable {
        public var id: String?
        public var name: String
        public var data: String
    }

    private struct State {
        var text = ""
        var exited = false
        var status: Int32 = 0
    }

    private final class Shared: Sendable {
        let state = Mutex(State())
    }

    private let process: Process
    private let shared = Shared()

    /// Opens `url` (GET, or POST with `body`), with the bearer `token` and extra headers; `maxTime` cuts it (curl's
    /// `--max-time`), as a dropped connection would.
    public init(
        _ url: String, token: String?, headers: [String: String] = [:], method: String = "GET", body: String? = nil,
        maxTime: Double = 60
    ) throws {
        var arguments = ["-sS", "-N", "--max-time", String(maxTime), "-X", method, "-w", "\n:curl status %{http_code} %{content_type}\n"]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { arguments += ["-H", "\(name): \(value)"] }
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        arguments.append(url)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let shared = shared
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            shared.state.withLock { $0.text += String(decoding: data, as: UTF8.self) }
        }
        process.terminationHandler = { process in
            // What is left in the pipe arrives before the handler sees its end.
            Thread.sleep(forTimeInterval: 0.05)
            shared.state.withLock {
                $0.exited = true
                $0.status = process.terminationStatus
            }
        }
        try process.run()
    }

    /// Everything read so far.
    public var text: String { shared.state.withLock { $0.text } }
    /// Whether the response has ended (the server closed it, or `maxTime` passed).
    public var ended: Bool { shared.state.withLock { $0.exited } }

    /// The HTTP status and content type curl saw, once it ended.
    public var statusLine: String? {
        text.components(separatedBy: "\n").last { $0.hasPrefix(":curl status ") }.map { String($0.dropFirst(":curl status ".count)) }
    }

    /// The events received so far (complete ones only).
    public var events: [Event] { Self.parse(text) }

    /// Comments received so far (`: keep-alive` heartbeats).
    public var comments: [String] {
        text.components(separatedBy: "\n").filter { $0.hasPrefix(":") && !$0.hasPrefix(":curl") }
    }

    public func stop() {
        if process.isRunning { process.terminate() }
    }

    /// Waits for the response to end, up to `timeout`.
    public func waitForEnd(timeout: Duration = .seconds(20)) async throws -> Bool {
        try await eventually(timeout: timeout) { ended }
    }

    static func parse(_ text: String) -> [Event] {
        var events: [Event] = []
        let blocks = text.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n\n")
        // The last block is complete only if the text ended with a blank line.
        for block in blocks.dropLast() {
            var id: String?
            var name = "message"
            var data: [String] = []
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data.append(String(line.dropFirst(6))) }
            }
            if !data.isEmpty { events.append(Event(id: id, name: name, data: data.joined(separator: "\n"))) }
        }
        return events
    }
}
