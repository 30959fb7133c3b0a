import Foundation
import JSON

extension CronExpression {
    /// The first fire time strictly after `date`, or nil if there is none within the next ten years.
    ///
    /// Wall-clock times are matched in `timeZone`. A wall time skipped by a daylight-saving jump fires
    /// once, at the first instant after the gap; a wall time that occurs twice fires once, at its first
    /// occurrence. The search jumps field by field, so even a yearly expression costs a few dozen steps.
    public func next(after date: Date, in timeZone: TimeZone) -> Date? {
        let reference = date.timeIntervalSince1970
        guard reference.isFinite, abs(reference) < 1e13 else { return nil }
        let seconds = Int(reference.rounded(.down))
        // Start from the earliest wall time `date` could be, then skip candidates that map to <= date.
        var candidate = CivilTime(secondsAsUTC: seconds + (Self.offsets(near: seconds, in: timeZone).min() ?? 0))
        let limit = candidate.year + 10
        for _ in 0..<10_000 {
            guard let wall = nextMatch(atOrAfter: candidate, yearLimit: limit) else { return nil }
            let instant = Self.instant(of: wall, in: timeZone)
            if Double(instant) > reference { return Date(timeIntervalSince1970: Double(instant)) }
            candidate = CivilTime(secondsAsUTC: wall.secondsAsUTC + 60)
        }
        return nil
    }

    /// The latest fire time at or before `date` (the scheduler uses it to catch up one missed fire),
    /// or nil if there is none within the past ten years. Same daylight-saving rules as `next`.
    public func previous(atOrBefore date: Date, in timeZone: TimeZone) -> Date? {
        let reference = date.timeIntervalSince1970
        guard reference.isFinite, abs(reference) < 1e13 else { return nil }
        let seconds = Int(reference.rounded(.down))
        // Start from the latest wall time `date` could be, then skip candidates that map to > date.
        var candidate = CivilTime(secondsAsUTC: seconds + (Self.offsets(near: seconds, in: timeZone).max() ?? 0))
        let limit = candidate.year - 10
        for _ in 0..<10_000 {
            guard let wall = previousMatch(atOrBefore: candidate, yearLimit: limit) else { return nil }
            let instant = Self.instant(of: wall, in: timeZone)
            if Double(instant) <= reference { return Date(timeIntervalSince1970: Double(instant)) }
            candidate = CivilTime(secondsAsUTC: wall.secondsAsUTC - 60)
        }
        return nil
    }

    // MARK: Matching wall times

    func matchesDay(_ time: CivilTime) -> Bool {
        let domMatches = (daysOfMonth >> UInt64(time.day)) & 1 == 1
        let dowMatches = (daysOfWeek >> UInt64(time.weekday)) & 1 == 1
        if dayOfMonthIsStar || dayOfWeekIsStar { return domMatches && dowMatches }
        return domMatches || dowMatches
    }

    /// The smallest matching wall time >= `start`.
    func nextMatch(atOrAfter start: CivilTime, yearLimit: Int) -> CivilTime? {
        var t = start
        while t.year <= yearLimit {
            guard let month = Self.firstBit(in: months, from: t.month, through: 12) else {
                t = CivilTime(year: t.year + 1, month: 1, day: 1, hour: 0, minute: 0)
                continue
            }
            if month != t.month { t = CivilTime(year: t.year, month: month, day: 1, hour: 0, minute: 0) }
            guard t.day <= CivilTime.daysIn(year: t.year, month: t.month), matchesDay(t) else {
                t = Self.startOfNextDay(t)
                continue
            }
            guard let hour = Self.firstBit(in: hours, from: t.hour, through: 23) else {
                t = Self.startOfNextDay(t)
                continue
            }
            if hour != t.hour {
                t.hour = hour
                t.minute = 0
            }
            guard let minute = Self.firstBit(in: minutes, from: t.minute, through: 59) else {
                if t.hour == 23 {
                    t = Self.startOfNextDay(t)
                } else {
                    t.hour += 1
                    t.minute = 0
                }
                continue
            }
            t.minute = minute
            return t
        }
        return nil
    }

    /// The largest matching wall time <= `start`.
    func previousMatch(atOrBefore start: CivilTime, yearLimit: Int) -> CivilTime? {
        var t = start
        while t.year >= yearLimit {
            guard let month = Self.lastBit(in: months, from: t.month, downTo: 1) else {
                t = CivilTime(year: t.year - 1, month: 12, day: 31, hour: 23, minute: 59)
                continue
            }
            if month != t.month {
                t = CivilTime(
                    year: t.year, month: month, day: CivilTime.daysIn(year: t.year, month: month), hour: 23,
                    minute: 59)
            }
            t.day = min(t.day, CivilTime.daysIn(year: t.year, month: t.month))
            guard matchesDay(t) else {
                t = Self.endOfPreviousDay(t)
                continue
            }
            guard let hour = Self.lastBit(in: hours, from: t.hour, downTo: 0) else {
                t = Self.endOfPreviousDay(t)
                continue
            }
            if hour != t.hour {
                t.hour = hour
                t.minute = 59
            }
            guard let minute = Self.lastBit(in: minutes, from: t.minute, downTo: 0) else {
                if t.hour == 0 {
                    t = Self.endOfPreviousDay(t)
                } else {
                    t.hour -= 1
                    t.minute = 59
                }
                continue
            }
            t.minute = minute
            return t
        }
        return nil
    }

    private static func startOfNextDay(_ t: CivilTime) -> CivilTime {
        if t.day < CivilTime.daysIn(year: t.year, month: t.month) {
            return CivilTime(year: t.year, month: t.month, day: t.day + 1, hour: 0, minute: 0)
        }
        if t.month < 12 { return CivilTime(year: t.year, month: t.month + 1, day: 1, hour: 0, minute: 0) }
        return CivilTime(year: t.year + 1, month: 1, day: 1, hour: 0, minute: 0)
    }

    private static func endOfPreviousDay(_ t: CivilTime) -> CivilTime {
        if t.day > 1 { return CivilTime(year: t.year, month: t.month, day: t.day - 1, hour: 23, minute: 59) }
        if t.month > 1 {
            let month = t.month - 1
            return CivilTime(
                year: t.year, month: month, day: CivilTime.daysIn(year: t.year, month: month), hour: 23, minute: 59)
        }
        return CivilTime(year: t.year - 1, month: 12, day: 31, hour: 23, minute: 59)
    }

    private static func firstBit(in bits: UInt64, from low: Int, through high: Int) -> Int? {
        guard low <= high else { return nil }
        let masked = (bits >> UInt64(low)) << UInt64(low)
        guard masked != 0 else { return nil }
        let bit = masked.trailingZeroBitCount
        return bit <= high ? bit : nil
    }

    private static func lastBit(in bits: UInt64, from high: Int, downTo low: Int) -> Int? {
        guard low <= high else { return nil }
        let masked = high >= 63 ? bits : bits & ((1 << UInt64(high + 1)) - 1)
        guard masked != 0 else { return nil }
        let bit = 63 - masked.leadingZeroBitCount
        return bit >= low ? bit : nil
    }

    // MARK: Wall time to instant

    /// The zone offsets in force around `seconds` (a day either side covers any real transition).
    static func offsets(near seconds: Int, in timeZone: TimeZone) -> [Int] {
        [-86_400, 0, 86_400].map {
            timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds + $0)))
        }
    }

    /// The instant a wall time fires at: its first occurrence, or for a wall time inside a
    /// spring-forward gap, the instant the gap ends.
    static func instant(of wall: CivilTime, in timeZone: TimeZone) -> Int {
        let local = wall.secondsAsUTC
        let offsets = Set(offsets(near: local, in: timeZone))
        let valid = offsets.map { local - $0 }.filter {
            timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double($0))) == local - $0
        }
        if let first = valid.min() { return first }
        // In a gap: read with the offset after the jump the wall time lands before the transition,
        // with the offset before it lands after. Find the transition between the two.
        guard let larger = offsets.max(), let smaller = offsets.min() else { return local }
        var low = local - larger  // offset here is still the old one
        var high = local - smaller  // offset here is already the new one
        let newOffset = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(high)))
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(middle))) == newOffset {
                high = middle
            } else {
                low = middle
            }
        }
        return high
    }
}
