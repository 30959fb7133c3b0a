import Foundation
import JSON

/// A five-field cron expression (`minute hour day-of-month month day-of-week`) with Vixie cron
/// semantics, so schedules mean what operators who know crontab expect.
///
/// Supports `*`, lists, ranges, steps (`*/15`, `1-10/2`, `5/20` = `5-59/20`), month and weekday names
/// (`jan`–`dec`, `sun`–`sat`), `7` for Sunday, and the macros `@yearly`, `@annually`, `@monthly`,
/// `@weekly`, `@daily`, `@midnight`, `@hourly`. When both day-of-month and day-of-week are restricted
/// (neither starts with `*`), a day matches if either does.
public struct CronExpression: Sendable, Equatable, CustomStringConvertible {
    /// Bit n set = minute n matches (0...59).
    let minutes: UInt64
    /// Bit n set = hour n matches (0...23).
    let hours: UInt64
    /// Bit n set = day n of the month matches (1...31).
    let daysOfMonth: UInt64
    /// Bit n set = month n matches (1...12).
    let months: UInt64
    /// Bit n set = weekday n matches (0 = Sunday ... 6).
    let daysOfWeek: UInt64
    /// Vixie cron: a day field that starts with `*` does not take part in the day-of-month OR
    /// day-of-week rule.
    let dayOfMonthIsStar: Bool
    let dayOfWeekIsStar: Bool

    /// The expression as written (whitespace normalised).
    public let description: String

    /// Thrown for an expression cron would refuse, or one that can never fire.
    public struct ParseError: Error, CustomStringConvertible, Sendable, Equatable {
        public var reason: String
        public var description: String { reason }
    }

    /// Parses an expression; the error says which field is wrong and why.
    public init(parsing text: String) throws {
        let normalized = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        var fields = normalized.split(separator: " ").map(String.init)
        if fields.count == 1, let macro = fields.first, macro.hasPrefix("@") {
            guard let expansion = Self.macros[macro.lowercased()] else {
                throw ParseError(
                    reason: "unknown macro '\(macro)'; expected one of "
                        + Self.macros.keys.sorted().joined(separator: ", "))
            }
            fields = expansion.split(separator: " ").map(String.init)
        }
        guard fields.count == 5 else {
            throw ParseError(
                reason: "expected 5 fields (minute hour day-of-month month day-of-week) or a macro such as "
                    + "@daily; got \(fields.count) in '\(normalized)'")
        }
        minutes = try Self.parseField(fields[0], .minute)
        hours = try Self.parseField(fields[1], .hour)
        daysOfMonth = try Self.parseField(fields[2], .dayOfMonth)
        months = try Self.parseField(fields[3], .month)
        let weekdays = try Self.parseField(fields[4], .dayOfWeek)
        // 7 is another name for Sunday.
        daysOfWeek = (weekdays & 0x7F) | ((weekdays >> 7) & 1)
        dayOfMonthIsStar = fields[2].hasPrefix("*")
        dayOfWeekIsStar = fields[4].hasPrefix("*")
        description = normalized

        // "0 0 30 2 *" is valid crontab that silently never runs: refuse it instead.
        if dayOfWeekIsStar {
            var longestMonth = 0
            for month in 1...12 where (months >> UInt64(month)) & 1 == 1 {
                longestMonth = max(longestMonth, Self.maximumDays(inMonth: month))
            }
            let firstDay = daysOfMonth.trailingZeroBitCount
            if firstDay > longestMonth {
                throw ParseError(reason: "day-of-month \(firstDay) never occurs in the selected months")
            }
        }
    }

    private static let macros: [String: String] = [
        "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
        "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
    ]

    private static func maximumDays(inMonth month: Int) -> Int {
        month == 2 ? 29 : CivilTime.daysIn(year: 2000, month: month)
    }

    enum Field: Sendable {
        case minute, hour, dayOfMonth, month, dayOfWeek

        var name: String {
            switch self {
            case .minute: "minute"
            case .hour: "hour"
            case .dayOfMonth: "day-of-month"
            case .month: "month"
            case .dayOfWeek: "day-of-week"
            }
        }

        var range: ClosedRange<Int> {
            switch self {
            case .minute: 0...59
            case .hour: 0...23
            case .dayOfMonth: 1...31
            case .month: 1...12
            case .dayOfWeek: 0...7
            }
        }

        var names: [String] {
            switch self {
            case .month: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
            case .dayOfWeek: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
            default: []
            }
        }

        /// The value of the first name (jan = 1, sun = 0).
        var firstNameValue: Int { self == .month ? 1 : 0 }
    }

    /// Parses one field into a bit set over its range.
    static func parseField(_ text: String, _ field: Field) throws(ParseError) -> UInt64 {
        var bits: UInt64 = 0
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            bits |= try parseItem(String(item), field)
        }
        return bits
    }

    private static func parseItem(_ item: String, _ field: Field) throws(ParseError) -> UInt64 {
        func fail(_ reason: String) -> ParseError { ParseError(reason: "\(field.name) '\(item)': \(reason)") }
        guard !item.isEmpty else { throw ParseError(reason: "\(field.name): empty list item") }
        let pieces = item.split(separator: "/", omittingEmptySubsequences: false)
        guard pieces.count <= 2 else { throw fail("more than one '/'") }
        var step = 1
        if pieces.count == 2 {
            guard let parsed = Int(pieces[1]), pieces[1].allSatisfy(\.isASCII) else {
                throw fail("step '\(pieces[1])' is not a number")
            }
            guard parsed >= 1 else { throw fail("step must be at least 1") }
            guard parsed <= field.range.count else {
                throw fail("step \(parsed) is larger than the field's range \(field.range.lowerBound)-\(field.range.upperBound)")
            }
            step = parsed
        }
        let rangeText = String(pieces[0])
        var lower: Int
        var upper: Int
        if rangeText == "*" {
            lower = field.range.lowerBound
            upper = field.range.upperBound
            if field == .dayOfWeek { upper = 6 }  // 7 would repeat Sunday
        } else {
            let bounds = rangeText.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count <= 2 else { throw fail("malformed range") }
            lower = try value(String(bounds[0]), field, item: item)
            if bounds.count == 2 {
                upper = try value(String(bounds[1]), field, item: item)
                guard lower <= upper else { throw fail("range start \(lower) is after its end \(upper)") }
            } else {
                // "5/15" means "5-59/15" (cronie, and what the author plainly wants).
                upper = pieces.count == 2 ? field.range.upperBound : lower
            }
        }
        var bits: UInt64 = 0
        for value in stride(from: lower, through: upper, by: step) { bits |= 1 << UInt64(value) }
        return bits
    }

    private static func value(_ text: String, _ field: Field, item: String) throws(ParseError) -> Int {
        if let index = field.names.firstIndex(of: text.lowercased()) { return index + field.firstNameValue }
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(text) else {
            throw ParseError(
                reason: "\(field.name) '\(item)': '\(text)' is not a number"
                    + (field.names.isEmpty ? "" : " or a name (\(field.names.first ?? "")-\(field.names.last ?? ""))"))
        }
        guard field.range.contains(number) else {
            throw ParseError(
                reason: "\(field.name) '\(item)': value \(number) out of range "
                    + "\(field.range.lowerBound)-\(field.range.upperBound)")
        }
        return number
    }
}
