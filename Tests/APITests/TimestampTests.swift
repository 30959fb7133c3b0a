import Foundation
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
