/// `Duration` in the units the C libraries, Redis and reports take: one place for the arithmetic on `components`
/// (seconds and attoseconds; a millisecond is 10^15 attoseconds).
extension Duration {
    /// Whole milliseconds, rounded down (Redis's PX and script arguments, Postgres' poll).
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return whole + attoseconds / 1_000_000_000_000_000
    }

    /// Whole milliseconds, rounded up: a timeout is never shortened by the rounding.
    public var millisecondsRoundedUp: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return whole + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }

    /// Milliseconds with their fraction, for logs and reports.
    public var fractionalMilliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }

    /// Milliseconds with three decimals, `12.345` (a log line's duration; `String(format: "%.3f")` went through
    /// Foundation's formatter, 2% of a no-op worker's CPU). Rounded down to the microsecond.
    public var millisecondsText: String {
        let (seconds, attoseconds) = components
        let micros = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        let sign = micros < 0 ? "-" : ""
        let magnitude = micros.magnitude
        let fraction = String(magnitude % 1000)
        return sign + String(magnitude / 1000) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// Seconds with their fraction (Foundation's `TimeInterval`).
    public var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
