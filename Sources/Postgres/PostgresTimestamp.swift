import Foundation

/// ISO timestamps (`DateStyle = ISO`) to and from `Date`, at PostgreSQL's microsecond precision, without
/// `DateFormatter` (locale-free, and fast enough for every row).
enum PostgresTimestamp {
    /// `2024-03-01 12:34:56.789012+00`, always UTC.
    static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        // Past PostgreSQL's range (294276 AD) a Date can only mean "forever".
        guard interval.isFinite, abs(interval) < 9_000_000_000_000 else { return interval < 0 ? "-infinity" : "infinity" }
        let micros = Int64((interval * 1_000_000).rounded())
        let (seconds, fraction) = floorDivide(micros, 1_000_000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        var text = year > 0 ? pad(year, 4) : pad(1 - year, 4)
        text += "-" + pad(month, 2) + "-" + pad(day, 2) + " "
        text += pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        if fraction != 0 { text += "." + pad(fraction, 6) }
        text += "+00"
        if year <= 0 { text += " BC" }
        return text
    }

    /// Reads `YYYY-MM-DD[ HH:MM:SS[.ffffff]][±HH[:MM[:SS]]][ BC]` (`date`, `timestamp`, `timestamptz` in ISO style);
    /// no offset means UTC.
    static func parse(_ text: String) -> Date? {
        // Read in place, without copying the bytes: a page of meals decodes two timestamps a row.
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// The same, from its UTF-8 (libpq's result, read in place).
    static func parse(utf8: UnsafeBufferPointer<UInt8>) -> Date? {
        if utf8.elementsEqual("infinity".utf8) { return .distantFuture }
        if utf8.elementsEqual("-infinity".utf8) { return .distantPast }
        return parseFinite(utf8: utf8)
    }

    private static func parseFinite(utf8: UnsafeBufferPointer<UInt8>) -> Date? {
        var scanner = Scanner(utf8)
        guard var year = scanner.number(), scanner.skip("-"), let month = scanner.number(digits: 2), scanner.skip("-"),
            let day = scanner.number(digits: 2), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var secondOfDay: Int64 = 0
        var micros: Int64 = 0
        var offset: Int64 = 0
        if scanner.skip(" ") || scanner.skip("T") {
            guard let hour = scanner.number(digits: 2), scanner.skip(":"), let minute = scanner.number(digits: 2), scanner.skip(":"),
                let second = scanner.number(digits: 2), hour <= 24, minute < 60, second < 61
            else { return nil }
            secondOfDay = hour * 3600 + minute * 60 + second
            if scanner.skip(".") {
                var scale: Int64 = 100_000
                guard let first = scanner.digit() else { return nil }
                micros = first * scale
                while let digit = scanner.digit() {
                    scale /= 10
                    micros += digit * scale  // digits past the sixth (none from PostgreSQL) add 0
                }
            }
            if let sign = scanner.sign() {
                guard let hours = scanner.number(digits: 2) else { return nil }
                var seconds = hours * 3600
                if scanner.skip(":") {
                    guard let minutes = scanner.number(digits: 2) else { return nil }
                    seconds += minutes * 60
                    if scanner.skip(":") {
                        guard let extra = scanner.number(digits: 2) else { return nil }
                        seconds += extra
                    }
                }
                offset = sign * seconds
            }
        }
        if scanner.skip(" BC") { year = 1 - year }
        guard scanner.isAtEnd else { return nil }
        guard year.magnitude < 1_000_000 else { return nil }
        let seconds = days(fromYear: year, month: month, day: day) * 86_400 + secondOfDay - offset
        let (total, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return nil }
        // Whole microseconds first, one division last: a Date made from the same instant reads back equal.
        return Date(timeIntervalSince1970: Double(total + micros) / 1_000_000)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func days(fromYear year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400).quotient
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `days(fromYear:month:day:)` (`civil_from_days`).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097).quotient
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
        let q = a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0)
        return (q, a - q * b)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        var isAtEnd: Bool { index == bytes.count }

        mutating func digit() -> Int64? {
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
            defer { index += 1 }
            return Int64(bytes[index] - UInt8(ascii: "0"))
        }

        /// At least one digit, or exactly `digits` when given.
        mutating func number(digits: Int? = nil) -> Int64? {
            let start = index
            var value: Int64 = 0
            while digits.map({ index - start < $0 }) ?? true, value < Int64.max / 100, let digit = digit() {
                value = value * 10 + digit
            }
            let count = index - start
            guard count > 0, digits.map({ count == $0 }) ?? true else { return nil }
            return value
        }

        /// Compares in place: this runs several times per timestamp cell, so no copies.
        mutating func skip(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
            index += count
            return true
        }

        mutating func sign() -> Int64? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }
    }
}
