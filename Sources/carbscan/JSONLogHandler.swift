import Foundation
import JSON
import Logging
import Settings

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
        var line = "{\"ts\":\"\(Self.timestamp())\",\"level\":\"\(event.level)\",\"msg\":"
        Self.appendQuoted(event.message.description, to: &line)
        line += ",\"logger\":"
        Self.appendQuoted(label, to: &line)
        var merged = event.metadata.map { metadata.merging($0) { $1 } } ?? metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty { merged.merge(provided) { current, _ in current } }
        for key in merged.keys.sorted() {
            line += ","
            Self.appendQuoted(key, to: &line)
            line += ":"
            Self.appendQuoted(merged[key]!.description, to: &line)
        }
        line += "}\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
            parts.tm_min, parts.tm_sec, now.tv_nsec / 1_000_000)
    }

    static func appendQuoted(_ text: String, to line: inout String) {
        line += JSONValue.string(text).jsonString
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
