/// The trace a log line written now belongs to, as the line carries it (`trace_id`, `span_id`, `trace_flags`, as
/// OpenTelemetry's log data model names them): the current span's, or a trace the sampler dropped, which has no span
/// here. Written into the line's bytes, not handed over as swift-log metadata: a metadata dictionary and its id
/// strings, merged into the line's other metadata, were 3% of a no-op worker's CPU at a line per job (perf,
/// 2026-11-29), more than the dropped traces themselves.
public struct LoggedTrace: Sendable, Equatable {
    public let traceHigh: UInt64
    public let traceLow: UInt64
    /// The span's id; nil in a trace the sampler dropped.
    public let spanID: UInt64?
    public let isSampled: Bool

    /// The running task's: nil while tracing is off, outside any trace, or where only a remote parent is current
    /// (no span of this process).
    public static var current: LoggedTrace? {
        guard TraceSwitch.isOn else { return nil }
        let span: SpanIdentity
        switch CurrentTrace.current {
        case .dropped(let dropped):
            let parent = dropped.traceparent
            return LoggedTrace(traceHigh: parent.traceIDHigh, traceLow: parent.traceIDLow, spanID: nil, isSampled: false)
        case .span(let recorded): span = recorded.identity
        case nil:
            guard let bound = InstrumentationContext.current?.spanIdentity, !bound.isRemote else { return nil }
            span = bound
        }
        return LoggedTrace(traceHigh: span.traceHigh, traceLow: span.traceLow, spanID: span.spanID, isSampled: span.isSampled)
    }

    /// The 32 hex digits of the trace id, appended.
    public func appendTraceID(to bytes: inout [UInt8]) {
        Self.append(32, to: &bytes) { buffer in
            HexText.write(traceHigh, into: buffer, at: 0)
            HexText.write(traceLow, into: buffer, at: 16)
        }
    }

    /// The 16 hex digits of the span id, appended (nothing without one).
    public func appendSpanID(to bytes: inout [UInt8]) {
        guard let spanID else { return }
        Self.append(16, to: &bytes) { HexText.write(spanID, into: $0, at: 0) }
    }

    /// `count` (at most 32) digits written by `fill` on the stack, then appended at once: appending zeros to fill in
    /// place went element by element.
    private static func append(_ count: Int, to bytes: inout [UInt8], _ fill: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { raw in
            let buffer = UnsafeMutableBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[..<count])
            fill(buffer)
            bytes.append(contentsOf: UnsafeBufferPointer(buffer))
        }
    }
}
