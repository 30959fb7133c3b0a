import Foundation

/// RFC 3339 date-times (`2025-11-19T12:00:00.000Z`, `2025-11-19T13:00:00+01:00`), read by arithmetic.
///
/// One reader for the payload schemas' `date-time` format and the API's request dates: Foundation's
/// `Date.ISO8601FormatStyle` took several microseconds per date (2.3% of the API's samples on `POST /logins`,
/// which tried the style with fractional seconds first and fell back to the one without).
public enum RFC3339 {
    /// The instant `text` names, or nil unless it is `full-date "T" partial-time time-offset`: a day that exists in
    /// its month, hours 00–23, minutes 00–59, seconds 00–60 (a leap second reads as the next minute's first), an
    /// optional fraction of at least one digit (nanoseconds kept, more digits ignored), and `Z` or `±hh:mm`.
    /// `T` and `Z` may be lower case (RFC 3339 §5.6).
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    /// Whether `text` is an RFC 3339 date-time (`parse` would read it).
    public static func isValid(_ text: String) -> Bool { parse(text) != nil }

    /// Whether `text` is an RFC 3339 `full-date`: `YYYY-MM-DD` with a day that exists in that month.
    public static func isFullDate(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var reader = Reader(bytes: bytes)
            return reader.fullDate() != nil && reader.atEnd
        }
    }

    static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        var reader = Reader(bytes: bytes)
        guard let (year, month, day) = reader.fullDate(), reader.skip("T", orLower: true),
            let hour = reader.number(digits: 2), reader.skip(":"), let minute = reader.number(digits: 2), reader.skip(":"),
            let second = reader.number(digits: 2), hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var nanoseconds = 0
        if reader.skip(".") {
            var digits = 0
            while let digit = reader.digit() {
                if digits < 9 { nanoseconds = nanoseconds * 10 + digit }
                digits += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 9) { nanoseconds *= 10 }
        }
        var offsetSeconds = 0
        if !reader.skip("Z", orLower: true) {
            guard let sign = reader.sign(), let offsetHour = reader.number(digits: 2), reader.skip(":"),
                let offsetMinute = reader.number(digits: 2), offsetHour <= 23, offsetMinute <= 59
            else { return nil }
            offsetSeconds = sign * (offsetHour * 3_600 + offsetMinute * 60)
        }
        guard reader.atEnd else { return nil }
        let seconds =
            CivilTime.daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60 + second
            - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func digit() -> Int? {
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
            defer { index += 1 }
            return Int(bytes[index] - UInt8(ascii: "0"))
        }

        mutating func number(digits: Int) -> Int? {
            var value = 0
            for _ in 0..<digits {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        /// `YYYY-MM-DD`, a day that exists in its month.
        mutating func fullDate() -> (year: Int, month: Int, day: Int)? {
            guard let year = number(digits: 4), skip("-"), let month = number(digits: 2), skip("-"), let day = number(digits: 2),
                (1...12).contains(month), day >= 1, day <= CivilTime.daysIn(year: year, month: month)
            else { return nil }
            return (year, month, day)
        }

        mutating func skip(_ character: Unicode.Scalar, orLower: Bool = false) -> Bool {
            guard index < bytes.count else { return false }
            let byte = bytes[index]
            guard byte == UInt8(ascii: character) || (orLower && byte == UInt8(ascii: character) | 0x20) else { return false }
            index += 1
            return true
        }

        mutating func sign() -> Int? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }
    }
}
