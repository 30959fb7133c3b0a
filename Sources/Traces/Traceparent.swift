/// A W3C `traceparent` header, read for the sampling decision taken before any span (`TraceSampling`) and for the
/// parent of a span started here (`SpanRecorder`), and written for the context a span sends on: `version-traceid-parentid-flags`, lowercase hex (W3C Trace Context, level 1 §3.2). What a
/// version-00 reader must refuse is refused (all-zero ids, version `ff`, uppercase, a wrong length); a later version's
/// header is read for its first four fields, as the specification asks.
public struct Traceparent: Sendable, Equatable {
    /// The trace id's first 8 bytes.
    public let traceIDHigh: UInt64
    /// The trace id's last 8 bytes, what ratio sampling compares (`TraceSampling`).
    public let traceIDLow: UInt64
    /// The parent (span) id.
    public let parentID: UInt64
    /// The trace flags as received (sampled is the lowest bit).
    private var flags: UInt8

    /// The sampled flag (the flags' lowest bit).
    public var isSampled: Bool { flags & 1 == 1 }

    /// The header as version 00 writes it, flags as received. Written when asked for, not when read or made: a job
    /// whose trace is dropped and that calls nothing never needs it (2 µs of a no-op job's 11, perf 2026-11-28).
    public var text: String {
        HexText.string(length: 55) { buffer in
            buffer[0] = UInt8(ascii: "0")
            buffer[1] = UInt8(ascii: "0")
            buffer[2] = .dash
            write(into: buffer, at: 3)
        }
    }

    /// What follows the version: `traceid-parentid-flags`, 52 bytes from `offset`.
    private func write(into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        HexText.write(traceIDHigh, into: buffer, at: offset)
        HexText.write(traceIDLow, into: buffer, at: offset + 16)
        buffer[offset + 32] = .dash
        HexText.write(parentID, into: buffer, at: offset + 33)
        buffer[offset + 49] = .dash
        HexText.write(flags, into: buffer, at: offset + 50)
    }

    /// The 32 hex digits of the trace id.
    public var traceID: String { HexText.traceID(high: traceIDHigh, low: traceIDLow) }

    public init?(_ header: some StringProtocol) {
        let parsed = header.utf8.withContiguousStorageIfAvailable(Self.parse) ?? Array(header.utf8).withUnsafeBufferPointer(Self.parse)
        guard let parsed else { return nil }
        (traceIDHigh, traceIDLow, parentID, flags) = parsed
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64, UInt64, UInt8)? {
        guard bytes.count >= 55, bytes[2] == .dash, bytes[35] == .dash, bytes[52] == .dash,
            let version = hex(bytes[0..<2]), version != 0xff,
            version != 0 || bytes.count == 55, bytes.count == 55 || bytes[55] == .dash,
            let traceHigh = hex(bytes[3..<19]), let traceLow = hex(bytes[19..<35]), traceHigh | traceLow != 0,
            let span = hex(bytes[36..<52]), span != 0, let flags = hex(bytes[53..<55])
        else { return nil }
        return (traceHigh, traceLow, span, UInt8(flags))
    }

    /// The same with its sampled flag cleared: what a participant that dropped the trace sends on.
    public var unsampled: Traceparent {
        var unsampled = self
        unsampled.flags &= ~1
        return unsampled
    }

    /// One written here: a span's context as it is sent on (flags 01 when `sampled`), or a new trace's, dropped.
    init(traceHigh: UInt64, traceLow: UInt64, span: UInt64, sampled: Bool = false) {
        traceIDHigh = traceHigh
        traceIDLow = traceLow
        parentID = span
        flags = sampled ? 1 : 0
    }

    /// The W3C Trace Context fields that carry it, with `tracestate` when there is one: an outbound call's headers.
    public func fields(tracestate: String?) -> [String: String] {
        var fields = ["traceparent": text]
        if let tracestate { fields["tracestate"] = tracestate }
        return fields
    }

    /// The same as a job's record carries them (`TraceCarrier`): `name=value` lines, sorted by name.
    public func carried(tracestate: String?) -> String {
        if let tracestate { return "traceparent=\(text)\ntracestate=\(tracestate)" }
        // Written in one string: every job of a dropped trace carries it.
        return HexText.string(length: 67) { buffer in
            for (index, byte) in "traceparent=00-".utf8.enumerated() { buffer[index] = byte }
            write(into: buffer, at: 15)
        }
    }

    /// The value of 1 to 16 lowercase hex digits; nil for anything else.
    private static func hex(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> UInt64? {
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
}

/// Ids as lowercase hex, written straight into a string's storage: `String(_:radix:)` and padding cost a traced
/// request 3 allocations per id.
enum HexText {
    /// The 32 digits of a trace id.
    static func traceID(high: UInt64, low: UInt64) -> String {
        string(length: 32) { buffer in
            write(high, into: buffer, at: 0)
            write(low, into: buffer, at: 16)
        }
    }

    /// The 16 digits of a span id.
    static func spanID(_ id: UInt64) -> String { string(length: 16) { write(id, into: $0, at: 0) } }

    static func string(length: Int, _ fill: (UnsafeMutableBufferPointer<UInt8>) -> Void) -> String {
        String(unsafeUninitializedCapacity: length) { buffer in
            fill(buffer)
            return length
        }
    }

    /// A 64-bit id's 16 digits at `offset`, 8 at a time in a register: the loop below, a digit at a time, was 80 ns of
    /// each log line's trace id in a dropped trace, a third of what the line's trace cost it (perf, 2026-12-07).
    static func write(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        precondition(offset >= 0 && offset + 16 <= buffer.count)
        let digits = (eight(UInt32(truncatingIfNeeded: value >> 32)), eight(UInt32(truncatingIfNeeded: value)))
        withUnsafeBytes(of: digits) { digits in
            UnsafeMutableRawPointer(buffer.baseAddress! + offset).copyMemory(from: digits.baseAddress!, byteCount: 16)
        }
    }

    /// `value`'s 8 lowercase hex digits as the bytes of a `UInt64` in memory order, most significant digit first: each
    /// nibble spread into a byte of its own, then each byte made `0`–`9` or `a`–`f` at once (a byte of 10 or more
    /// carries into bit 4 when 6 is added, and those get the 39 between `9` + 1 and `a`).
    private static func eight(_ value: UInt32) -> UInt64 {
        var spread = UInt64(value)
        spread = (spread | spread << 16) & 0x0000_FFFF_0000_FFFF
        spread = (spread | spread << 8) & 0x00FF_00FF_00FF_00FF
        spread = (spread | spread << 4) & 0x0F0F_0F0F_0F0F_0F0F
        // Byte i now holds nibble i, the least significant first: reversed, the most significant comes first.
        let letters = ((spread &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return (spread &+ 0x3030_3030_3030_3030 &+ letters &* 39).byteSwapped.littleEndian
    }

    /// `value`'s digits, all of them (leading zeros too), at `offset`.
    static func write<Value: FixedWidthInteger & UnsignedInteger>(
        _ value: Value, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int
    ) {
        let count = Value.bitWidth / 4
        var rest = value
        for index in stride(from: offset + count - 1, through: offset, by: -1) {
            let digit = UInt8(truncatingIfNeeded: rest & 0xf)
            buffer[index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
            rest >>= 4
        }
    }
}

extension UInt8 {
    fileprivate static let dash = UInt8(ascii: "-")
}
