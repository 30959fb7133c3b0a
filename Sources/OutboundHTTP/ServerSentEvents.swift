/// One server-sent event: what a `text/event-stream` body dispatches at each blank line.
package struct ServerSentEvent: Sendable, Equatable {
    /// The `event` field; `message` when the event named none.
    package var type: String
    /// The `data` fields' values joined by line feeds.
    package var data: String
    /// The last `id` field seen so far in the stream (it carries over to later events), or nil.
    package var lastEventID: String?

    package init(type: String = "message", data: String, lastEventID: String? = nil) {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

/// The WHATWG HTML "event stream" interpretation (§9.2.6), fed the body in whatever pieces it arrives in: lines end
/// at CRLF, LF or CR (a CR ending one piece and the LF starting the next are one line end); `field: value` with one
/// leading space dropped from the value; `data` values joined by line feeds; lines starting with `:` are comments;
/// an event is dispatched at a blank line, and not at all when it has no data; what follows the last blank line
/// when the body ends is discarded. Lines are decoded as UTF-8 only once whole, so a piece may end inside a
/// character. `retry` is not kept: nothing here reconnects.
package struct ServerSentEventParser: Sendable {
    private var line: [UInt8] = []
    /// The previous piece ended with a CR: an LF starting this one belongs to it.
    private var afterCR = false
    private var atStart = true
    private var type = ""
    private var data = ""
    private var hasData = false
    private var lastEventID: String?

    package init() {}

    /// The events `bytes` completes, in order.
    package mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0D:
                afterCR = true
                endLine(into: &events)
            case 0x0A:
                endLine(into: &events)
            default:
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine(into events: inout [ServerSentEvent]) {
        defer { line.removeAll(keepingCapacity: true) }
        if atStart {
            atStart = false
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }  // a byte order mark is skipped
        }
        guard !line.isEmpty else {
            if hasData { events.append(ServerSentEvent(type: type.isEmpty ? "message" : type, data: data, lastEventID: lastEventID)) }
            type = ""
            data = ""
            hasData = false
            return
        }
        guard line[0] != UInt8(ascii: ":") else { return }
        let field: String
        let value: String
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = String(decoding: line[..<colon], as: UTF8.self)
            var start = colon + 1
            if start < line.endIndex && line[start] == UInt8(ascii: " ") { start += 1 }
            value = String(decoding: line[start...], as: UTF8.self)
        } else {
            field = String(decoding: line, as: UTF8.self)
            value = ""
        }
        switch field {
        case "event":
            type = value
        case "data":
            if hasData { data += "\n" }
            data += value
            hasData = true
        case "id" where !value.utf8.contains(0):
            lastEventID = value
        default:
            break  // `retry` and unknown fields are ignored
        }
    }
}
