/// Spans that ended, as a batch holds them and the exporter sends them: each one `ScopeSpans.spans` entry (field 2's
/// tag, its length, the `Span` message), one after another. The exporter puts them in a request as they are.
public struct EncodedSpans: Sendable {
    /// The entries, tags included.
    public let bytes: [UInt8]
    public let count: Int

    public var isEmpty: Bool { count == 0 }

    /// The spans read back from their bytes (for tests, and whoever inspects what a batch holds).
    public var decoded: [FinishedSpan] {
        (ProtobufReader.fields(of: bytes[...]) ?? []).compactMap { entry in
            guard entry.field == 2, case .bytes(let message) = entry.value else { return nil }
            return FinishedSpan(message)
        }
    }
}

/// A span that ended, read back from the `Span` message it was written as: what a test checks of it. Its links are not
/// read back (the suite's receiver checks those).
public struct FinishedSpan: Sendable {
    public struct Event: Sendable {
        public let name: String
        /// Nanoseconds since the Unix epoch.
        public let time: UInt64
        public let attributes: [String: SpanFields.Value]
    }

    public private(set) var identity = SpanIdentity(
        traceHigh: 0, traceLow: 0, spanID: 0, isSampled: false, tracestate: nil, isRemote: false)
    /// The parent's span id, 0 for a root span.
    public private(set) var parentID: UInt64 = 0
    public private(set) var parentIsRemote = false
    public private(set) var name = ""
    public private(set) var kind = SpanKind.internal
    /// Nanoseconds since the Unix epoch.
    public private(set) var start: UInt64 = 0
    public private(set) var end: UInt64 = 0
    public private(set) var fields = SpanFields()
    public private(set) var status: SpanStatus?
    public private(set) var events: [Event] = []

    /// Nil for bytes that are no `Span` message.
    init?(_ message: ArraySlice<UInt8>) {
        guard let entries = ProtobufReader.fields(of: message) else { return nil }
        var trace: (UInt64, UInt64) = (0, 0)
        var spanID: UInt64 = 0
        var tracestate: String?
        var flags: UInt64 = 0
        var attributes: [UInt8] = []
        for (field, value) in entries {
            switch (field, value) {
            case (1, .bytes(let id)) where id.count == 16: trace = (Self.number(id.prefix(8)), Self.number(id.suffix(8)))
            case (2, .bytes(let id)) where id.count == 8: spanID = Self.number(id)
            case (3, .bytes(let text)): tracestate = String(decoding: text, as: UTF8.self)
            case (4, .bytes(let id)) where id.count == 8: parentID = Self.number(id)
            case (5, .bytes(let text)): name = String(decoding: text, as: UTF8.self)
            case (6, .number(let number)): kind = SpanMessage.kinds.first { SpanMessage.kind($0) == number } ?? kind
            case (7, .number(let time)): start = time
            case (8, .number(let time)): end = time
            case (9, .bytes(let keyValue)): attributes += ProtobufWriter.entry(9, keyValue)
            case (11, .bytes(let event)): events.append(Self.event(event))
            case (15, .bytes(let status)): self.status = Self.status(status)
            case (16, .number(let number)): flags = number
            default: continue
            }
        }
        parentIsRemote = flags & 0x200 != 0
        identity = SpanIdentity(
            traceHigh: trace.0, traceLow: trace.1, spanID: spanID, isSampled: flags & 1 != 0, tracestate: tracestate, isRemote: false)
        fields = SpanFields(encoded: attributes)
    }

    /// A big-endian id's bytes as its number.
    private static func number(_ bytes: ArraySlice<UInt8>) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }

    private static func event(_ message: ArraySlice<UInt8>) -> Event {
        var (name, time, attributes) = ("", UInt64(0), [UInt8]())
        for (field, value) in ProtobufReader.fields(of: message) ?? [] {
            switch (field, value) {
            case (1, .number(let number)): time = number
            case (2, .bytes(let text)): name = String(decoding: text, as: UTF8.self)
            case (3, .bytes(let keyValue)): attributes += ProtobufWriter.entry(9, keyValue)
            default: continue
            }
        }
        let entries = SpanFields(encoded: attributes).entries
        return Event(name: name, time: time, attributes: Dictionary(entries, uniquingKeysWith: { $1 }))
    }

    private static func status(_ message: ArraySlice<UInt8>) -> SpanStatus {
        var (code, text): (UInt64, String?) = (0, nil)
        for (field, value) in ProtobufReader.fields(of: message) ?? [] {
            if field == 3, case .number(let number) = value { code = number }
            if field == 2 { text = value.text }
        }
        return SpanStatus(code: code == 1 ? .ok : .error, message: text)
    }
}
