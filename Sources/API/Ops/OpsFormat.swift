import Foundation
import JSON

/// How the dashboard writes times and durations: absolute in UTC (`2026-11-25 12:00:05 UTC`) with a relative hint.
enum OpsFormat {
    struct Moment {
        var absolute: String
        var relative: String
    }

    static func moment(_ date: Date, now: Date = Date()) -> Moment {
        Moment(absolute: absolute(date), relative: relative(date, now: now))
    }

    static func absolute(_ date: Date) -> String {
        let civil = CivilTime(secondsAsUTC: Int(date.timeIntervalSince1970.rounded(.down)))
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let second = ((seconds % 60) + 60) % 60
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02d UTC", civil.year, civil.month, civil.day, civil.hour, civil.minute, second)
    }

    static func relative(_ date: Date, now: Date) -> String {
        let delta = date.timeIntervalSince(now)
        let text = span(abs(delta))
        return delta >= 0 ? "in \(text)" : "\(text) ago"
    }

    static func span(_ seconds: Double) -> String {
        switch seconds {
        case ..<1: "0 s"
        case ..<120: "\(Int(seconds)) s"
        case ..<7200: "\(Int(seconds / 60)) min"
        case ..<172_800: "\(Int(seconds / 3600)) h"
        default: "\(Int(seconds / 86_400)) d"
        }
    }

    static func duration(_ duration: Duration) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return seconds < 1 ? "\(Int(seconds * 1000)) ms" : span(seconds)
    }
}
