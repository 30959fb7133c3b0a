import Foundation

extension Duration {
    /// Parses the duration syntax of job-kind files: an integer and a unit, `ms`, `s`, `m`, `h` or `d`
    /// (`500ms`, `30s`, `5m`, `1h`, `7d`).
    ///
    /// A bare number is refused on purpose: `timeout: 30` could mean seconds or milliseconds, and
    /// guessing wrong is a 1000x outage. Returns nil for anything else, including overflow.
    public init?(parsing text: String) {
        let units: [(suffix: String, milliseconds: Int)] = [
            ("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000),
        ]
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // "ms" before "m"/"s", so the longest suffix wins.
        guard let unit = units.first(where: { trimmed.hasSuffix($0.suffix) }) else { return nil }
        let digits = trimmed.dropLast(unit.suffix.count)
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            let amount = Int(digits)
        else { return nil }
        let (total, overflow) = amount.multipliedReportingOverflow(by: unit.milliseconds)
        guard !overflow else { return nil }
        self = .milliseconds(total)
    }

    /// The largest unit that renders the duration exactly (`90s`, `2m`, `1500ms`): the inverse of
    /// `init(parsing:)`, for CLI listings and error messages.
    public var configText: String {
        let totalMilliseconds = components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000
        for (suffix, size) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)]
        where totalMilliseconds != 0 && totalMilliseconds % Int64(size) == 0 {
            return "\(totalMilliseconds / Int64(size))\(suffix)"
        }
        return "\(totalMilliseconds)ms"
    }
}
