import Foundation

/// Typed reads of environment variables: the one way this project reads its environment, and only the executable
/// does (library modules take plain values, so a test builds them directly and nothing changes behind a process's back).
///
/// Every read trims surrounding white space and takes an absent or blank variable as unset, which gives the default;
/// any other value must parse and be in range, or the read throws ``SettingError`` naming the variable.
///
/// Names follow one rule:
/// - `…Options` are chosen in code or by command-line flags (`QueueOptions`, `WorkerOptions`, `GlobalOptions`);
/// - `…Settings` are what an operator sets in the environment (`AuthSettings`, `APISettings`, `WorkerSettings`): plain
///   structs in their modules, filled from this reader by the executable (`Sources/carbscan/Settings/`);
/// - `…Configuration` is how to reach a server, parsed from its URL (`RedisConfiguration`, `PostgresConfiguration`).
///
/// Our own rather than swift-configuration 1.4's `ConfigReader` (on the machine's mirror): its default and optional
/// variants return the fallback or nil for a value that is set but cannot be converted ("Choosing reader methods"),
/// which is the silent fallback this type exists to refuse, and its required variant refuses an absent value too;
/// neither checks ranges. Wrapping it would have kept all of this code and added a dependency.
public struct EnvironmentReader: Sendable, ExpressibleByDictionaryLiteral {
    public let values: [String: String]

    public init(_ values: [String: String]) {
        self.values = values
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(Dictionary(elements) { $1 })
    }

    /// The environment of this process.
    public static var process: EnvironmentReader { EnvironmentReader(ProcessInfo.processInfo.environment) }

    /// The value without surrounding white space; nil when absent or blank.
    public func text(_ name: String) -> String? {
        guard let text = values[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        return text
    }

    /// The value exactly as set, white space included (a password may begin or end with a space); nil when absent or
    /// empty.
    public func secret(_ name: String) -> String? {
        values[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    public func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws(SettingError) -> Int {
        guard let text = text(name) else { return fallback }
        guard let number = Int(text), range.contains(number) else {
            throw SettingError(name, "must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }

    /// Seconds, fractions allowed.
    public func seconds(_ name: String, default fallback: Duration, in range: ClosedRange<Double>) throws(SettingError) -> Duration {
        guard let text = text(name) else { return fallback }
        guard let seconds = Double(text), range.contains(seconds) else {
            throw SettingError(
                name, "must be a number of seconds from \(Self.format(range.lowerBound)) to \(Self.format(range.upperBound)), not '\(text)'"
            )
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// Whole seconds above zero (token lifetimes).
    public func wholeSeconds(_ name: String, default fallback: Duration) throws(SettingError) -> Duration {
        guard let text = text(name) else { return fallback }
        guard let seconds = Int(text), seconds > 0 else {
            throw SettingError(name, "must be a positive whole number of seconds, not '\(text)'")
        }
        return .seconds(seconds)
    }

    /// `true`, `1`, `yes`, `on` or `false`, `0`, `no`, `off`, in any case.
    public func bool(_ name: String, default fallback: Bool) throws(SettingError) -> Bool {
        guard let text = text(name) else { return fallback }
        switch text.lowercased() {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default: throw SettingError(name, "must be true or false, not '\(text)'")
        }
    }

    /// An IANA zone name (`Europe/Berlin`, `UTC`).
    public func timeZone(_ name: String, default fallback: TimeZone) throws(SettingError) -> TimeZone {
        guard let text = text(name) else { return fallback }
        guard let zone = TimeZone(identifier: text) else {
            throw SettingError(name, "must be an IANA time zone such as UTC or Europe/Berlin, not '\(text)'")
        }
        return zone
    }

    /// A URL that paths are appended to: without its trailing slash, so `{base}/v1/…` has one.
    public func baseURL(_ name: String) -> String? {
        text(name).map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    /// Comma-separated items, each trimmed; blank items are skipped. Empty when unset.
    public func list(_ name: String) -> [String] {
        guard let text = text(name) else { return [] }
        return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// `key=value,key=value`; an item without `=` or with an empty side is refused.
    public func pairs(_ name: String) throws(SettingError) -> [String: String] {
        var pairs: [String: String] = [:]
        for item in list(name) {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw SettingError(name, "must be key=value pairs separated by commas; '\(item)' is not one")
            }
            pairs[parts[0]] = parts[1]
        }
        return pairs
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
