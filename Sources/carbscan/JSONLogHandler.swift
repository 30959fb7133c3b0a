import Foundation
import JSON
import Logging
import Settings
import Synchronization

/// Writes one JSON object per line to stderr: `{"ts":…,"level":…,"msg":…,"logger":…, metadata…}`.
/// Nothing secret is ever put in metadata by this project (URLs are logged redacted, tokens never).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    /// The current span's ids when tracing is on (`trace_id`, `span_id`).
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, level: Logger.Level, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.logLevel = level
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line = "{\"ts\":\""
        // A job's line is about 220 bytes: one allocation, not a doubling at each append.
        line.reserveCapacity(320)
        LogClock.appendTimestamp(to: &line)
        line += "\",\"level\":\""
        line += event.level.rawValue
        line += "\",\"msg\":"
        JSONValue.appendQuoted(event.message.description, to: &line)
        line += ",\"logger\":"
        JSONValue.appendQuoted(label, to: &line)
        var merged = metadata
        if let own = event.metadata { merged = merged.isEmpty ? own : merged.merging(own) { $1 } }
        if let provided = metadataProvider?.get(), !provided.isEmpty { merged.merge(provided) { current, _ in current } }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            line += ","
            JSONValue.appendQuoted(key, to: &line)
            line += ":"
            if case .string(let text) = value {
                JSONValue.appendQuoted(text, to: &line)
            } else {
                JSONValue.appendQuoted(value.description, to: &line)
            }
        }
        line += "}\n"
        // One write(2) per line, as FileHandle's did, without its copy into a `Data`: lines of concurrent writers
        // up to PIPE_BUF stay whole.
        line.withUTF8 { bytes in
            var left = UnsafeRawBufferPointer(bytes)
            while !left.isEmpty {
                let written = write(STDERR_FILENO, left.baseAddress, left.count)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                left = UnsafeRawBufferPointer(rebasing: left[written...])
            }
        }
    }
}

/// The log lines' timestamps, `2026-11-27T20:36:17.123Z`: the part up to the second is formatted once a second (it
/// went through Foundation's `String(format:)`, 2% of a no-op worker's CPU at a line per job).
enum LogClock {
    private static let cache = Mutex<(second: Int, prefix: String)>((-1, ""))

    static func appendTimestamp(to line: inout String) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = now.tv_sec
        let prefix = cache.withLock { cache -> String in
            if cache.second != second {
                var seconds = second
                var parts = tm()
                gmtime_r(&seconds, &parts)
                cache = (
                    second,
                    digits(Int(parts.tm_year) + 1900, 4) + "-" + digits(Int(parts.tm_mon) + 1, 2) + "-" + digits(Int(parts.tm_mday), 2)
                        + "T" + digits(Int(parts.tm_hour), 2) + ":" + digits(Int(parts.tm_min), 2) + ":"
                        + digits(Int(parts.tm_sec), 2) + "."
                )
            }
            return cache.prefix
        }
        line += prefix
        line += digits(now.tv_nsec / 1_000_000, 3)
        line += "Z"
    }

    private static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
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
        let provider = (try? TracingSetup.isWanted(.process)) == true ? TracingSetup.logMetadata : nil
        LoggingSystem.bootstrap({ JSONLogHandler(label: $0, level: level, metadataProvider: $1) }, metadataProvider: provider)
    }

    /// `LOG_LEVEL`, or `fallback` when it is unset or not a level's name.
    static func level(default fallback: Logger.Level) -> Logger.Level {
        EnvironmentReader.process.text("LOG_LEVEL").flatMap(Logger.Level.init(rawValue:)) ?? fallback
    }
}
