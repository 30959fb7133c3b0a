import Testing

@testable import Queue

@Suite struct CronExpressionParsingTests {
    private func minutes(_ text: String) throws -> [Int] {
        let expression = try CronExpression(parsing: "\(text) * * * *")
        return (0...59).filter { (expression.minutes >> UInt64($0)) & 1 == 1 }
    }

    @Test func fieldSyntax() throws {
        #expect(try minutes("*/15") == [0, 15, 30, 45])
        #expect(try minutes("1-10/2") == [1, 3, 5, 7, 9])
        #expect(try minutes("5,7,9-10") == [5, 7, 9, 10])
        #expect(try minutes("50/5") == [50, 55])
        #expect(try minutes("7") == [7])
        #expect(try minutes("*").count == 60)
    }

    @Test func namesAndSundayAsSeven() throws {
        let named = try CronExpression(parsing: "0 0 * JAN-mar mon-FRI")
        #expect(named.months == 0b1110)
        #expect(named.daysOfWeek == 0b0111110)
        #expect(try CronExpression(parsing: "0 0 * * 7").daysOfWeek == 1)
        #expect(try CronExpression(parsing: "0 0 * * 5-7").daysOfWeek == 0b1100001)
        #expect(try CronExpression(parsing: "0 0 * * sun").daysOfWeek == 1)
    }

    @Test func macros() throws {
        #expect(try CronExpression(parsing: "@daily").minutes == CronExpression(parsing: "0 0 * * *").minutes)
        #expect(try CronExpression(parsing: "@midnight").hours == 1)
        #expect(try CronExpression(parsing: "@hourly").hours == (1 << 24) - 1)
        #expect(try CronExpression(parsing: "@weekly").daysOfWeek == 1)
        #expect(try CronExpression(parsing: "@monthly").daysOfMonth == 1 << 1)
        let yearly = try CronExpression(parsing: "@yearly")
        #expect(yearly.months == 1 << 1 && yearly.daysOfMonth == 1 << 1)
        #expect(try CronExpression(parsing: "@annually").months == 1 << 1)
        #expect(try CronExpression(parsing: "  0   0  * * * ").description == "0 0 * * *")
    }

    @Test(arguments: [
        ("", "expected 5 fields"),
        ("* * * *", "got 4"),
        ("* * * * * *", "got 6"),
        ("60 * * * *", "minute '60': value 60 out of range 0-59"),
        ("* 24 * * *", "hour '24': value 24 out of range 0-23"),
        ("* * 0 * *", "day-of-month '0': value 0 out of range 1-31"),
        ("* * 32 * *", "day-of-month '32'"),
        ("* * * 13 *", "month '13': value 13 out of range 1-12"),
        ("* * * * 8", "day-of-week '8': value 8 out of range 0-7"),
        ("*/0 * * * *", "step must be at least 1"),
        ("*/x * * * *", "step 'x' is not a number"),
        ("*/61 * * * *", "larger than the field's range"),
        ("5-1 * * * *", "range start 5 is after its end 1"),
        ("1-2-3 * * * *", "malformed range"),
        ("1,,2 * * * *", "empty list item"),
        ("a * * * *", "'a' is not a number"),
        ("* * * foo *", "or a name (jan-dec)"),
        ("*/5/2 * * * *", "more than one '/'"),
        ("@reboot", "unknown macro '@reboot'"),
        ("0 0 30 2 *", "never occurs"),
        ("0 0 31 4,6 *", "never occurs"),
    ])
    func errors(text: String, expected: String) {
        do {
            _ = try CronExpression(parsing: text)
            Issue.record("'\(text)' parsed")
        } catch {
            #expect("\(error)".contains(expected), "\(error)")
        }
    }

    @Test func feb29AndOrRulesAreNotNeverFiring() throws {
        _ = try CronExpression(parsing: "0 0 29 2 *")
        _ = try CronExpression(parsing: "0 0 30 2 1")  // Vixie OR: every Monday in February
    }
}
