import Testing

@testable import Queue

@Suite struct DurationParsingTests {
    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("5m", .seconds(300)), ("1h", .seconds(3_600)),
        ("7d", .seconds(604_800)), ("0s", .zero), (" 2s ", .seconds(2)),
    ])
    func parsesUnits(text: String, expected: Duration) {
        #expect(Duration(parsing: text) == expected)
    }

    @Test(arguments: ["30", "abc", "", "s", "1.5s", "-1s", "1 s", "1w", "10sec", "1h30m", "99999999999999999999d", "٣s"])
    func refusesEverythingElse(text: String) {
        #expect(Duration(parsing: text) == nil)
    }

    @Test func configTextUsesTheLargestExactUnit() {
        #expect(Duration.seconds(90).configText == "90s")
        #expect(Duration.seconds(120).configText == "2m")
        #expect(Duration.milliseconds(1_500).configText == "1500ms")
        #expect(Duration.seconds(86_400 * 30).configText == "30d")
        #expect(Duration.zero.configText == "0ms")
    }
}
