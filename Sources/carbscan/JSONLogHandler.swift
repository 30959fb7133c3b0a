import Foundation
import JSON
import Logging
import Settings
import Synchronization
import Traces

/// Writes one JSON object per line to stderr: `{"ts":…,"level":…,"msg":…,"logger":…, metadata…}`.
/// Nothing secret is ever put in metadata by this project (URLs are logged redacted, tokens never).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    /// Whether a line carries the trace it is written in (`LoggedTrace`): when the `OTEL_` variables turn tracing on.
    let carriesTrace: Bool

    init(label: String, level: Logger.Level, metadataProvider: Logger.MetadataProvider? = nil, carriesTrace: Bool = false) {
        self.label = label
        self.logLevel = level
        self.metadataProvider = metadataProvider
        self.carriesTrace = carriesTrace
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        // Bytes, not a String: a String's appends (capacity and ASCII-flag bookkeeping on each) were a tenth of a
        // worker's CPU at a line per no-op job (perf, 2026-11-28).
        var line: [UInt8] = []
        // A job's line is about 200 bytes: one allocation, not a doubling at each append.
        line.reserveCapacity(384)
        line.append(contentsOf: #"{"ts":""#.utf8)
        LogClock.appendTimestamp(to: &line)
        line.append(contentsOf: #"","level":""#.utf8)
        line.append(contentsOf: event.level.rawValue.utf8)
        line.append(contentsOf: #"","msg":"#.utf8)
        JSONValue.appendQuoted(event.message.description, to: &line)
        line.append(contentsOf: #","logger":"#.utf8)
        JSONValue.appendQuoted(label, to: &line)
        // Whether the line's metadata names a trace already: found in this loop, where a second pass over the entries
        // copied each one's value (perf, 2026-12-08).
        var namesTrace = false
        for (key, value) in entries(of: event) {
            if key == "trace_id" { namesTrace = true }
            line.append(UInt8(ascii: ","))
            JSONValue.appendQuoted(key, to: &line)
            line.append(UInt8(ascii: ":"))
            if case .string(let text) = value {
                JSONValue.appendQuoted(text, to: &line)
            } else {
                JSONValue.appendQuoted(value.description, to: &line)
            }
        }
        if carriesTrace, !namesTrace, let trace = LoggedTrace.current {
            Self.append(trace, to: &line)
        }
        line.append(contentsOf: "}\n".utf8)
        // One write(2) per line, as FileHandle's did, without its copy into a `Data`: lines of concurrent writers
        // up to PIPE_BUF stay whole.
        line.withUnsafeBytes { bytes in
            var left = bytes
            while !left.isEmpty {
                let written = write(STDERR_FILENO, left.baseAddress, left.count)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                left = UnsafeRawBufferPointer(rebasing: left[written...])
            }
        }
    }

    /// `,"span_id":"…","trace_flags":"1","trace_id":"…"`, without the span's id in a trace the sampler dropped.
    private static func append(_ trace: LoggedTrace, to line: inout [UInt8]) {
        if trace.spanID != nil {
            line.append(contentsOf: #","span_id":""#.utf8)
            trace.appendSpanID(to: &line)
            line.append(UInt8(ascii: "\""))
        }
        line.append(contentsOf: (trace.isSampled ? #","trace_flags":"1","trace_id":""# : #","trace_flags":"0","trace_id":""#).utf8)
        trace.appendTraceID(to: &line)
        line.append(UInt8(ascii: "\""))
    }

    /// The line's metadata by key: the event's over the logger's, both over the span's ids from the provider. Only
    /// the event's, most lines, need no merged dictionary.
    private func entries(of event: LogEvent) -> [(key: String, value: Logger.Metadata.Value)] {
        let provided = metadataProvider?.get() ?? [:]
        var merged = event.metadata ?? [:]
        if !metadata.isEmpty { merged = metadata.merging(merged) { $1 } }
        if !provided.isEmpty { merged.merge(provided) { current, _ in current } }
        return merged.sorted { $0.key < $1.key }
    }
}

/// The log lines' timestamps, `2026-11-27T20:36:17.123Z`: the part up to the second is formatted once a second (it
/// went through Foundation's `String(format:)`, 2% of a no-op worker's CPU at a line per job).
enum LogClock {
    private static let cache = Mutex<(second: Int, prefix: [UInt8])>((-1, []))

    static func appendTimestamp(to line: inout [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = now.tv_sec
        cache.withLock { cache in
            if cache.second != second {
                var seconds = second
                var parts = tm()
                gmtime_r(&seconds, &parts)
                var prefix: [UInt8] = []
                digits(Int(parts.tm_year) + 1900, 4, to: &prefix)
                prefix.append(UInt8(ascii: "-"))
                digits(Int(parts.tm_mon) + 1, 2, to: &prefix)
                prefix.append(UInt8(ascii: "-"))
                digits(Int(parts.tm_mday), 2, to: &prefix)
                prefix.append(UInt8(ascii: "T"))
                digits(Int(parts.tm_hour), 2, to: &prefix)
                prefix.append(UInt8(ascii: ":"))
                digits(Int(parts.tm_min), 2, to: &prefix)
                prefix.append(UInt8(ascii: ":"))
                digits(Int(parts.tm_sec), 2, to: &prefix)
                prefix.append(UInt8(ascii: "."))
                cache = (second, prefix)
            }
            line.append(contentsOf: cache.prefix)
        }
        digits(now.tv_nsec / 1_000_000, 3, to: &line)
        line.append(UInt8(ascii: "Z"))
    }

    /// `value` (not negative) in `width` decimal digits, zeros first; more digits if it needs them.
    private static func digits(_ value: Int, _ width: Int, to line: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            line.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}

extension Logger {
    /// The `jobs` commands' logger: plain lines on stderr, warnings and worse unless `LOG_LEVEL` says otherwise, so
    /// that a command's output is its answer (a line at info for every connection was noise there).
    static var cli: Logger {
        var logger = Logger(label: "carbscan.cli")
        logger.logLevel = LogSetup.level(default: .warning)
        return logger
    }
}

enum LogSetup {
    /// JSON lines on stderr at `LOG_LEVEL` (trace, debug, info, notice, warning, error, critical; default info); a
    /// line written inside a span carries its ids when the `OTEL_` variables turn tracing on (`TracingSetup`).
    static func bootstrap() {
        let level = level(default: .info)
        let traced = (try? TracingSetup.isWanted(.process)) == true
        LoggingSystem.bootstrap { JSONLogHandler(label: $0, level: level, carriesTrace: traced) }
    }

    /// `LOG_LEVEL`, or `fallback` when it is unset or not a level's name.
    static func level(default fallback: Logger.Level) -> Logger.Level {
        EnvironmentReader.process.text("LOG_LEVEL").flatMap(Logger.Level.init(rawValue:)) ?? fallback
    }
}
