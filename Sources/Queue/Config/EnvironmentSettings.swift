import Foundation

/// A setting that is present but wrong. Start-up refuses it (exit 78, EX_CONFIG) naming the variable, instead of
/// running on a default the operator did not choose.
public struct SettingError: Error, CustomStringConvertible, Sendable {
    public let variable: String
    public let reason: String

    public init(_ variable: String, _ reason: String) {
        self.variable = variable
        self.reason = reason
    }

    public var description: String { "\(variable): \(reason)" }
}

/// Typed reads of environment variables. Absent or blank gives the default; any other value must parse and be in
/// range, or the read throws ``SettingError``.
///
/// Our own rather than swift-configuration 1.4's `ConfigReader` (on the machine's mirror): its default and optional
/// variants return the fallback or nil for a value that is set but cannot be converted ("Choosing reader methods"),
/// which is the silent fallback this type exists to refuse, and its required variant refuses an absent value too;
/// neither checks ranges. Wrapping it would have kept all of this code and added a dependency.
public struct EnvironmentSettings: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String]) {
        self.values = values
    }

    /// The value without surrounding white space; nil when absent or blank.
    public func text(_ name: String) -> String? {
        guard let text = values[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        return text
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

    /// An IANA zone name (`Europe/Berlin`, `UTC`).
    public func timeZone(_ name: String, default fallback: TimeZone) throws(SettingError) -> TimeZone {
        guard let text = text(name) else { return fallback }
        guard let zone = TimeZone(identifier: text) else {
            throw SettingError(name, "must be an IANA time zone such as UTC or Europe/Berlin, not '\(text)'")
        }
        return zone
    }

    /// `key=value,key=value`; an item without `=` or with an empty side is refused.
    public func pairs(_ name: String) throws(SettingError) -> [String: String] {
        guard let text = text(name) else { return [:] }
        var pairs: [String: String] = [:]
        for item in text.split(separator: ",") {
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
