import Durations
import Testing

/// `Duration.millisecondsText`, the job lines' `duration_ms`: three decimals, rounded down to the microsecond.
@Suite struct DurationTextTests {
    @Test(arguments: [
        (Duration.microseconds(12_345), "12.345"), (.milliseconds(2), "2.000"), (.microseconds(5), "0.005"),
        (.seconds(1), "1000.000"), (.nanoseconds(999), "0.000"), (.zero, "0.000"), (.microseconds(-1_500), "-1.500"),
        (.seconds(90_061), "90061000.000"),
    ])
    func millisecondsHaveThreeDecimals(duration: Duration, text: String) {
        #expect(duration.millisecondsText == text)
    }
}
