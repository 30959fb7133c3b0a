import Foundation
import Testing

@testable import Queue

@Suite struct CronExpressionScheduleTests {
    private let utc = CronSchedule.utc

    private func next(_ cron: String, after: String, in zone: TimeZone? = nil) throws -> String? {
        try iso(CronExpression(parsing: cron).next(after: instant(after), in: zone ?? utc))
    }

    private func previous(_ cron: String, atOrBefore: String, in zone: TimeZone? = nil) throws -> String? {
        try iso(CronExpression(parsing: cron).previous(atOrBefore: instant(atOrBefore), in: zone ?? utc))
    }

    /// Successive fire times, each strictly after the previous.
    private func sequence(_ cron: String, after: String, count: Int, in zone: TimeZone) throws -> [String] {
        let expression = try CronExpression(parsing: cron)
        var date = try instant(after)
        var result: [String] = []
        for _ in 0..<count {
            guard let fire = expression.next(after: date, in: zone) else { break }
            result.append(iso(fire) ?? "")
            date = fire
        }
        return result
    }

    @Test func everyFifteenMinutesIsStrictlyAfter() throws {
        #expect(try next("*/15 * * * *", after: "2026-05-05T10:07:30Z") == "2026-05-05T10:15:00Z")
        #expect(try next("*/15 * * * *", after: "2026-05-05T10:15:00Z") == "2026-05-05T10:30:00Z")
        #expect(try next("*/15 * * * *", after: "2026-12-31T23:59:00Z") == "2027-01-01T00:00:00Z")
        #expect(try previous("*/15 * * * *", atOrBefore: "2026-05-05T10:15:00Z") == "2026-05-05T10:15:00Z")
        #expect(try previous("*/15 * * * *", atOrBefore: "2026-05-05T10:14:59Z") == "2026-05-05T10:00:00Z")
    }

    @Test func monthlyAndMonthEnds() throws {
        #expect(try next("0 0 1 * *", after: "2026-12-15T08:00:00Z") == "2027-01-01T00:00:00Z")
        #expect(try next("0 0 1 * *", after: "2027-01-01T00:00:00Z") == "2027-02-01T00:00:00Z")
        #expect(try previous("0 0 1 * *", atOrBefore: "2027-01-01T00:00:00Z") == "2027-01-01T00:00:00Z")
        #expect(try previous("0 0 1 * *", atOrBefore: "2026-12-31T23:59:59Z") == "2026-12-01T00:00:00Z")
        #expect(
            try sequence("0 0 31 * *", after: "2026-01-31T00:00:00Z", count: 3, in: utc)
                == ["2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z"])
        #expect(try previous("0 0 31 * *", atOrBefore: "2026-03-30T00:00:00Z") == "2026-01-31T00:00:00Z")
        #expect(try next("@yearly", after: "2026-06-01T00:00:00Z") == "2027-01-01T00:00:00Z")
    }

    @Test func leapDay() throws {
        #expect(try next("0 12 29 2 *", after: "2026-03-01T00:00:00Z") == "2028-02-29T12:00:00Z")
        #expect(try previous("0 12 29 2 *", atOrBefore: "2028-02-28T00:00:00Z") == "2024-02-29T12:00:00Z")
        // 2100 is not a leap year: eight years between two February 29ths.
        #expect(try next("0 0 29 2 *", after: "2096-03-01T00:00:00Z") == "2104-02-29T00:00:00Z")
    }

    @Test func dayOfMonthOrDayOfWeekWhenBothRestricted() throws {
        // 2026-02-02 and 02-09 are Mondays, 02-10 a Tuesday: the 10th or any Monday.
        #expect(
            try sequence("0 9 10 * 1", after: "2026-02-03T00:00:00Z", count: 3, in: utc)
                == ["2026-02-09T09:00:00Z", "2026-02-10T09:00:00Z", "2026-02-16T09:00:00Z"])
        // A day field starting with '*' takes no part in the OR (Vixie): 1st/11th/21st/31st AND Monday.
        #expect(try next("0 9 */10 * 1", after: "2026-01-01T00:00:00Z") == "2026-05-11T09:00:00Z")
        #expect(try next("0 9 * * mon", after: "2026-02-03T00:00:00Z") == "2026-02-09T09:00:00Z")
        #expect(try previous("0 9 10 * 1", atOrBefore: "2026-02-15T00:00:00Z") == "2026-02-10T09:00:00Z")
    }

    @Test func springForwardInNewYorkFiresOnceAtTheEndOfTheGap() throws {
        let newYork = try zone("America/New_York")
        // 2026-03-08 02:00 EST jumps to 03:00 EDT (07:00Z); 02:30 does not exist that day.
        #expect(
            try sequence("30 2 * * *", after: "2026-03-07T12:00:00Z", count: 3, in: newYork)
                == ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"])
        // 02:00, 02:15, 02:30, 02:45 and 03:00 all land on 07:00Z: one fire, then 03:15 EDT.
        #expect(
            try sequence("*/15 * * * *", after: "2026-03-08T06:30:00Z", count: 4, in: newYork)
                == ["2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z", "2026-03-08T07:30:00Z"])
        #expect(try previous("30 2 * * *", atOrBefore: "2026-03-08T12:00:00Z", in: newYork) == "2026-03-08T07:00:00Z")
        #expect(try previous("30 2 * * *", atOrBefore: "2026-03-08T06:59:59Z", in: newYork) == "2026-03-07T07:30:00Z")
    }

    @Test func fallBackInNewYorkFiresTheFirstOccurrenceOnly() throws {
        let newYork = try zone("America/New_York")
        // 2026-11-01 02:00 EDT falls back to 01:00 EST: 01:30 happens at 05:30Z and again at 06:30Z.
        #expect(
            try sequence("30 1 * * *", after: "2026-10-31T12:00:00Z", count: 2, in: newYork)
                == ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"])
        #expect(
            try sequence("*/30 * * * *", after: "2026-11-01T05:00:00Z", count: 3, in: newYork)
                == ["2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"])
        // Inside the repeated hour the latest fire is the first 01:30, not a second one.
        #expect(try previous("*/30 * * * *", atOrBefore: "2026-11-01T06:45:00Z", in: newYork) == "2026-11-01T05:30:00Z")
        #expect(try previous("0 0 * * *", atOrBefore: "2026-11-01T12:00:00Z", in: newYork) == "2026-11-01T04:00:00Z")
    }

    @Test func berlinTransitions() throws {
        let berlin = try zone("Europe/Berlin")
        // 2026-03-29 02:00 CET jumps to 03:00 CEST (01:00Z).
        #expect(
            try sequence("30 2 * * *", after: "2026-03-28T12:00:00Z", count: 2, in: berlin)
                == ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"])
        #expect(try next("0 3 * * *", after: "2026-03-28T12:00:00Z", in: berlin) == "2026-03-29T01:00:00Z")
        // 2026-10-25 03:00 CEST falls back to 02:00 CET: 02:30 first at 00:30Z (CEST).
        #expect(
            try sequence("30 2 * * *", after: "2026-10-24T12:00:00Z", count: 2, in: berlin)
                == ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"])
        #expect(try next("0 0 1 * *", after: "2026-10-15T00:00:00Z", in: berlin) == "2026-10-31T23:00:00Z")
        #expect(try previous("0 0 1 * *", atOrBefore: "2026-10-31T22:59:59Z", in: berlin) == "2026-09-30T22:00:00Z")
    }

    @Test func halfHourZone() throws {
        #expect(try next("0 0 * * *", after: "2026-01-01T00:00:00Z", in: zone("Asia/Kolkata")) == "2026-01-01T18:30:00Z")
    }

    @Test func searchEndsAtATenYearHorizon() throws {
        // Vixie AND ('*/29' starts with '*'): a February 1st (or 30th) that is also a Monday. After
        // 2027-02-01 the next is 2038-02-01, eleven years on: beyond the horizon, so nil, not a long spin.
        let expression = try CronExpression(parsing: "0 0 */29 2 1")
        #expect(expression.next(after: try instant("2027-03-01T00:00:00Z"), in: utc) == nil)
        #expect(iso(expression.next(after: try instant("2028-03-01T00:00:00Z"), in: utc)) == "2038-02-01T00:00:00Z")
        #expect(iso(expression.previous(atOrBefore: try instant("2037-12-31T00:00:00Z"), in: utc)) == "2027-02-01T00:00:00Z")
        #expect(iso(expression.previous(atOrBefore: try instant("2021-01-01T00:00:00Z"), in: utc)) == "2016-02-01T00:00:00Z")
    }
}
