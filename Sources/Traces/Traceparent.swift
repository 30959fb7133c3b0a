/// A W3C `traceparent` header, read for the sampling decision taken before any span (`TraceSampling`) and for the
/// parent of a span started here (`SpanRecorder`), and written for the context a span sends on: `version-traceid-parentid-flags`, lowercase hex (W3C Trace Context, level 1 §3.2). What a
/// version-00 reader must refuse is refused (all-zero ids, version `ff`, uppercase, a wrong length); a later version's
/// header is read for its first four fields, as the specification asks.
public struct Traceparent: Sendable, Equatable {
    /// The header as version 00 writes it, flags as received.
    public private(set) var text: String
    /// The trace id's first 8 bytes.
    public let traceIDHigh: UInt64
    /// The trace id's last 8 bytes, what ratio sampling compares (`TraceSampling`).
    public let traceIDLow: UInt64
    /// The parent (span) id.
    public let parentID: UInt64
    /// The sampled flag (the flags' lowest bit).
    public private(set) var isSampled: Bool
    /// The 32 hex digits of the trace id.
    public var traceID: Substring { text.dropFirst(3).prefix(32) }
    /// The 16 hex digits of the parent (span) id.
    public var spanID: Substring { text.dropFirst(36).prefix(16) }

    public init?(_ header: some StringProtocol) {
        let bytes = Array(header.utf8)
        guard bytes.count >= 55, bytes[2] == .dash, bytes[35] == .dash, bytes[52] == .dash,
            let version = Self.hex(bytes[0..<2]), version != 0xff,
            version != 0 || bytes.count == 55, bytes.count == 55 || bytes[55] == .dash,
            let traceHigh = Self.hex(bytes[3..<19]), let traceLow = Self.hex(bytes[19..<35]), traceHigh | traceLow != 0,
            let span = Self.hex(bytes[36..<52]), span != 0, let flags = Self.hex(bytes[53..<55])
        else { return nil }
        traceIDHigh = traceHigh
        traceIDLow = traceLow
        parentID = span
        isSampled = flags & 1 == 1
        text = version == 0 ? String(header) : "00" + String(decoding: bytes[2..<55], as: UTF8.self)
    }

    /// The same with its sampled flag cleared: what a participant that dropped the trace sends on.
    public var unsampled: Traceparent {
        guard isSampled else { return self }
        var bytes = Array(text.utf8)
        bytes[54] -= 1  // an odd hex digit, 1…f, less one
        var unsampled = self
        unsampled.text = String(decoding: bytes, as: UTF8.self)
        unsampled.isSampled = false
        return unsampled
    }

    /// One written here: a span's context as it is sent on (flags 01 when `sampled`), or a new trace's, dropped.
    init(traceHigh: UInt64, traceLow: UInt64, span: UInt64, sampled: Bool = false) {
        traceIDHigh = traceHigh
        traceIDLow = traceLow
        parentID = span
        isSampled = sampled
        var text = "00-"
        text.reserveCapacity(55)
        Self.append(traceHigh, to: &text)
        Self.append(traceLow, to: &text)
        text += "-"
        Self.append(span, to: &text)
        text += sampled ? "-01" : "-00"
        self.text = text
    }

    /// The W3C Trace Context fields that carry it, with `tracestate` when there is one: an outbound call's headers.
    public func fields(tracestate: String?) -> [String: String] {
        var fields = ["traceparent": text]
        if let tracestate { fields["tracestate"] = tracestate }
        return fields
    }

    /// The same as a job's record carries them (`TraceCarrier`): `name=value` lines, sorted by name.
    public func carried(tracestate: String?) -> String {
        tracestate.map { "traceparent=\(text)\ntracestate=\($0)" } ?? "traceparent=\(text)"
    }

    /// The value of 1 to 16 lowercase hex digits; nil for anything else.
    private static func hex(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for digit in digits {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt64(digit - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt64(digit - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return value
    }

    static func append(_ value: UInt64, to text: inout String) {
        let digits = String(value, radix: 16)
        text += String(repeating: "0", count: 16 - digits.utf8.count)
        text += digits
    }
}

extension UInt8 {
    fileprivate static let dash = UInt8(ascii: "-")
}
