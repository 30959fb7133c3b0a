import Hummingbird
import NIOCore

/// Text in the WHATWG `text/event-stream` format: one event per `event(…)`, comments for heartbeats.
enum ServerSentEvents {
    static let contentType = "text/event-stream; charset=utf-8"

    /// One event: its id (what the client sends back as `Last-Event-ID`), name and data, one `data:` line per line.
    static func event(id: String?, name: String, data: String) -> String {
        var text = ""
        if let id { text += "id: \(id)\n" }
        text += "event: \(name)\n"
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
        return text + "\n"
    }

    /// A comment line: ignored by clients, it keeps proxies from closing an idle stream.
    static let heartbeat = ": keep-alive\n\n"

    /// Tells the client how long to wait before reconnecting (ms), sent first.
    static func retry(_ delay: Duration) -> String { "retry: \(delay.components.seconds * 1000)\n\n" }
}

extension ResponseBodyWriter {
    mutating func write(_ text: String) async throws {
        try await write(ByteBuffer(string: text))
    }
}
