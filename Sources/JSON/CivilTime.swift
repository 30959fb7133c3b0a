/// A wall-clock minute in the proleptic Gregorian calendar, with no time zone.
///
/// Cron matches wall-clock fields; doing that arithmetic on plain integers (instead of `Calendar`)
/// keeps the search fast and makes the time zone matter in exactly one place: `CronExpression`'s
/// conversion of a wall time to an instant.
public struct CivilTime: Sendable, Equatable, Comparable {
    public var year: Int
    public var month: Int  // 1...12
    public var day: Int  // 1...31
    public var hour: Int  // 0...23
    public var minute: Int  // 0...59

    public static func < (a: CivilTime, b: CivilTime) -> Bool {
        (a.year, a.month, a.day, a.hour, a.minute) < (b.year, b.month, b.day, b.hour, b.minute)
    }

    public static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    public static func daysIn(year: Int, month: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    public static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// 0 = Sunday ... 6 = Saturday.
    public var weekday: Int {
        let days = Self.daysSinceEpoch(year: year, month: month, day: day)
        return ((days % 7) + 7 + 4) % 7  // 1970-01-01 was a Thursday
    }

    /// The wall time read as if it were UTC, in seconds since 1970: wall time minus the zone offset
    /// gives the instant.
    public var secondsAsUTC: Int {
        Self.daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60
    }

    /// The wall time `seconds` after 1970-01-01 00:00 (seconds floored to the minute).
    public init(secondsAsUTC seconds: Int) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // civil_from_days
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        self.init(
            year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month: month, day: day,
            hour: secondOfDay / 3_600, minute: secondOfDay % 3_600 / 60)
    }

    public init(year: Int, month: Int, day: Int, hour: Int, minute: Int) {
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
    }
}
