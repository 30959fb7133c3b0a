import Foundation
import JSON
import Testing

@testable import API

@Suite struct TimestampTests {
    /// The arithmetic formatter agrees with Foundation's ISO 8601 style (Gregorian dates; Foundation switches to the
    /// Julian calendar before 1582) across leap days, negative times and milliseconds.
    @Test(arguments: [
        0.0, 951_782_400.123, 1_709_208_000.999, 4_102_444_799.5, -1.0, -2_203_891_200.0, 1_795_326_414.6404157,
    ])
    func formatsLikeFoundation(_ seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        let truncated = Date(timeIntervalSince1970: (seconds * 1000).rounded(.down) / 1000)
        let expected = truncated.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
        #expect(Timestamp.format(date) == expected)
    }

    @Test func roundTripsThroughParse() {
        let date = Date(timeIntervalSince1970: 1_732_233_600.25)
        #expect(Timestamp.parse(Timestamp.format(date)) == date)
    }
}

/// `Timestamp.parse` (``RFC3339``) against Foundation's ISO 8601 styles, which it replaced for request dates.
@Suite struct TimestampParseTests {
    static func foundation(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }

    @Test(arguments: [
        "2026-11-22T12:00:00Z", "2026-11-22T12:00:00.000Z", "2026-11-22T12:00:00.5Z", "2026-11-22T12:00:00.123Z",
        "2024-02-29T23:59:59.999Z", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2026-11-22T12:00:00+01:00",
        "2026-11-22T12:00:00-05:30", "2026-11-22T00:30:00+14:00", "2000-03-01T00:00:00.010-00:00", "2100-12-31T23:59:59Z",
    ])
    func readsTheSameInstantAsFoundation(_ text: String) throws {
        let expected = try #require(Self.foundation(text))
        let parsed = try #require(Timestamp.parse(text))
        #expect(abs(parsed.timeIntervalSince1970 - expected.timeIntervalSince1970) < 0.000_001, "\(text)")
    }

    @Test(arguments: [
        "", "2026-11-22", "2026-11-22T12:00Z", "2026-11-22T12:00:00", "2026-11-22 12:00:00Z", "2026-13-01T00:00:00Z",
        "2026-02-29T00:00:00Z", "2026-11-31T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T12:60:00Z",
        "2026-11-22T12:00:00.Z", "2026-11-22T12:00:00+0100", "2026-11-22T12:00:00+1", "2026-11-22T12:00:00Zjunk",
        "26-11-22T12:00:00Z", "2026-1-22T12:00:00Z", "２０２６-11-22T12:00:00Z", "2026-11-22T12:00:00+24:00",
    ])
    func refusesWhatIsNotAnRFC3339DateTime(_ text: String) {
        #expect(Timestamp.parse(text) == nil, "\(text)")
    }

    @Test func keepsFractionsAndReadsLowerCaseSeparators() throws {
        let micro = try #require(Timestamp.parse("2026-11-22T12:00:00.123456Z"))
        #expect(abs(micro.timeIntervalSince1970 - 1_795_348_800.123456) < 0.000_001)
        #expect(Timestamp.parse("2026-11-22t12:00:00z") == Timestamp.parse("2026-11-22T12:00:00Z"))
        // More than nine digits of fraction: the rest is below a nanosecond.
        #expect(Timestamp.parse("2026-11-22T12:00:00.1234567891234Z") != nil)
    }
}
