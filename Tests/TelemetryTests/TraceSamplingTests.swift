import Testing

@testable import Traces

/// The sampling decision taken before any span, and the W3C `traceparent` it reads and writes.
@Suite struct TraceSamplingTests {
    static let sampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    static let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"

    /// Ids are written 8 digits at a time (`HexText`): every digit, 0–9 and a–f, at every place, in every form ids
    /// take (a trace id, a span id, a `traceparent`, a log line's bytes), against the standard library's digits.
    @Test func idsAreWrittenAsLowercaseHexWithEveryDigit() throws {
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        var values: [UInt64] = [0, 1, 9, 10, 15, 16, .max, 0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210, 0x9a9a_9a9a_9a9a_9a9a]
        values += (0..<16).map { UInt64($0) << 60 | UInt64($0) }
        var generator = SystemRandomNumberGenerator()
        values += (0..<2000).map { _ in generator.next() }
        for (high, low) in zip(values, values.reversed()) {
            let span = SpanIdentity(traceHigh: high, traceLow: low, spanID: high ^ low, isSampled: true, tracestate: nil, isRemote: false)
            #expect(span.traceID == hex(high) + hex(low))
            #expect(span.spanIDText == hex(high ^ low))
            guard high | low != 0, high ^ low != 0 else { continue }
            #expect(span.traceparent.text == "00-\(hex(high))\(hex(low))-\(hex(high ^ low))-01")
            let logged = LoggedTrace(traceHigh: high, traceLow: low, spanID: high ^ low, isSampled: true)
            var bytes: [UInt8] = Array("x".utf8)
            logged.appendTraceID(to: &bytes)
            logged.appendSpanID(to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == "x" + hex(high) + hex(low) + hex(high ^ low))
        }
    }

    @Test func aTraceparentIsReadAsW3CWritesIt() throws {
        let parent = try #require(Traceparent(Self.sampled))
        #expect(parent.isSampled && parent.text == Self.sampled)
        #expect(parent.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && parent.parentID == 0x00f0_67aa_0ba9_02b7)
        #expect(parent.traceIDLow == 0xa3ce_929d_0e0e_4736)
        #expect(Traceparent(Self.unsampled)?.isSampled == false)
        // Flags other than the sampled bit are kept; `09` is sampled, `0a` is not.
        #expect(Traceparent(Self.sampled.dropLast(2) + "09")?.isSampled == true)
        #expect(Traceparent(Self.sampled.dropLast(2) + "0a")?.isSampled == false)
        // A later version is read for its four fields and sent on as version 00.
        #expect(Traceparent("cc" + Self.sampled.dropFirst(2) + "-what-comes-later")?.text == Self.sampled)
    }

    @Test func whatW3CRefusesIsNoTraceparent() {
        for header in [
            "", Self.sampled.uppercased(), "ff" + Self.sampled.dropFirst(2), Self.sampled + "-extra",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "cc" + Self.sampled.dropFirst(2) + "x",
        ] {
            #expect(Traceparent(header) == nil, "\(header)")
        }
    }

    @Test func aDroppedParentTravelsUnsampledWithItsState() throws {
        let parent = try #require(Traceparent(Self.sampled.dropLast(2) + "03"))
        #expect(parent.unsampled.text == Self.sampled.dropLast(2) + "02" && !parent.unsampled.isSampled)
        // always_off drops even a sampled parent, which then travels unsampled.
        let dropped = try #require(TraceSampling(followsParent: false, ratio: 0).dropped(parent: parent, tracestate: "congo=t61"))
        #expect(dropped.fields == ["traceparent": Self.sampled.dropLast(2) + "02", "tracestate": "congo=t61"])
        #expect(dropped.carried == "traceparent=\(Self.sampled.dropLast(2) + "02")\ntracestate=congo=t61")
        #expect(TraceCarrier.traceID(of: dropped.carried) == "4bf92f3577b34da6a3ce929d0e0e4736")
        // Without a tracestate, the one line.
        let alone = try #require(TraceSampling(followsParent: false, ratio: 0).dropped(parent: parent))
        #expect(alone.carried == "traceparent=\(Self.sampled.dropLast(2) + "02")")
        #expect(TraceCarrier.traceFields(of: alone.carried[...]).traceparent.map(String.init) == alone.traceparent.text)
    }

    @Test func parentBasedSamplingFollowsTheParentsFlag() throws {
        let sampled = try #require(Traceparent(Self.sampled))
        let unsampled = try #require(Traceparent(Self.unsampled))
        for ratio in [0.0, 0.1, 1.0] {
            let sampling = TraceSampling(followsParent: true, ratio: ratio)
            #expect(sampling.dropped(parent: sampled) == nil, "ratio \(ratio)")
            #expect(sampling.dropped(parent: unsampled)?.traceparent == unsampled, "ratio \(ratio)")
        }
    }

    /// Without a parent, or with one whose flag is not followed, the trace id's last 8 bytes decide: the same id the
    /// same way in every process.
    @Test func theRatioComparesTheTraceIDsLastEightBytes() throws {
        let low = try #require(Traceparent("00-ffffffffffffffff0000000000000001-00f067aa0ba902b7-00"))
        let high = try #require(Traceparent("00-0000000000000001f000000000000000-00f067aa0ba902b7-00"))
        let tenth = TraceSampling(followsParent: false, ratio: 0.1)
        #expect(tenth.dropped(parent: low) == nil)
        #expect(tenth.dropped(parent: high)?.traceparent == high)
        #expect(TraceSampling(followsParent: false, ratio: 1).dropped(parent: high) == nil)
        #expect(TraceSampling(followsParent: false, ratio: 0).dropped(parent: low) != nil)
        // A sampled parent's flag is not followed: the id decides, and the trace travels on unsampled.
        let sampledHigh = try #require(Traceparent("00-0000000000000001f000000000000000-00f067aa0ba902b7-01"))
        let sampledLow = try #require(Traceparent("00-ffffffffffffffff0000000000000001-00f067aa0ba902b7-01"))
        #expect(tenth.dropped(parent: sampledHigh)?.traceparent.isSampled == false)
        #expect(tenth.dropped(parent: sampledLow) == nil)
        #expect(TraceSampling(followsParent: false, ratio: 0).dropped(parent: sampledLow)?.traceparent.isSampled == false)
    }

    @Test func newTracesAreSampledAtTheRatio() throws {
        #expect(TraceSampling(followsParent: true, ratio: 1).dropped(parent: nil) == nil)
        let never = TraceSampling(followsParent: true, ratio: 0)
        var ids = Set<String>()
        for _ in 0..<1000 {
            let trace = try #require(never.dropped(parent: nil))
            // A valid W3C traceparent, flags 00, a new trace id each time.
            #expect(Traceparent(trace.traceparent.text) == trace.traceparent && !trace.traceparent.isSampled)
            #expect(trace.tracestate == nil)
            ids.insert(trace.traceparent.traceID)
        }
        #expect(ids.count == 1000)
        let tenth = TraceSampling(followsParent: true, ratio: 0.1)
        let kept = (0..<20_000).filter { _ in tenth.dropped(parent: nil) == nil }.count
        #expect((1_600...2_400).contains(kept), "\(kept) of 20,000")
    }

    /// A task in a dropped trace carries it (to a job's record, to an outbound call's headers), and is in no sampled
    /// trace.
    @Test func aDroppedTracesTaskCarriesOnlyItsTraceparent() throws {
        let trace = try #require(TraceSampling(followsParent: true, ratio: 0).dropped(parent: nil))
        #expect(!TraceCarrier.inTrace)
        CurrentTrace.local.withValue(.dropped(trace)) {
            #expect(TraceCarrier.inTrace)
            #expect(TraceCarrier.propagated(nil) == ["traceparent": trace.traceparent.text])
            #expect(TraceCarrier.currentFields == ["traceparent": trace.traceparent.text])
            #expect(!TraceSwitch.inSampledTrace)
        }
        #expect(TraceCarrier.propagated(nil).isEmpty)
    }
}
