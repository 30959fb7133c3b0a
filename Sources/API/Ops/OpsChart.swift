import Foundation
import Queue

/// The overview's 24 h chart: jobs succeeded and failed per 10 minutes, from the workers' per-minute history, drawn
/// on the server as an inline SVG (no script, no chart library).
enum OpsChart {
    static let bucketMinutes = 10

    static func svg(_ history: [HistoryMinute]) -> String? {
        guard !history.isEmpty else { return nil }
        var buckets: [(start: Date, ok: Int, fail: Int)] = []
        for (index, minute) in history.enumerated() {
            if index % bucketMinutes == 0 { buckets.append((minute.minute, 0, 0)) }
            for counts in minute.kinds.values {
                buckets[buckets.count - 1].ok += counts.succeeded
                buckets[buckets.count - 1].fail += counts.failed
            }
        }
        let width = 960.0
        let height = 200.0
        let left = 48.0
        let bottom = 24.0
        let top = 10.0
        let peak = max(1, buckets.map { max($0.ok, $0.fail) }.max() ?? 1)
        let step = (width - left - 8) / Double(max(1, buckets.count - 1))
        func y(_ value: Int) -> Double { top + (height - top - bottom) * (1 - Double(value) / Double(peak)) }
        func line(_ value: KeyPath<(start: Date, ok: Int, fail: Int), Int>) -> String {
            buckets.enumerated().map { index, bucket in
                String(format: "%.1f,%.1f", left + Double(index) * step, y(bucket[keyPath: value]))
            }.joined(separator: " ")
        }
        var svg =
            #"<svg class="chart" viewBox="0 0 \#(Int(width)) \#(Int(height))" role="img" aria-label="Jobs per 10 minutes, last 24 hours">"#
        for fraction in [0.0, 0.5, 1.0] {
            let value = Int((Double(peak) * fraction).rounded())
            let lineY = y(value)
            svg += String(format: #"<line class="grid" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/>"#, left, width - 8, lineY, lineY)
            svg += String(format: #"<text x="%.0f" y="%.1f" text-anchor="end">%d</text>"#, left - 6, lineY + 4, value)
        }
        for index in stride(from: 0, to: buckets.count, by: max(1, buckets.count / 6)) {
            let label = OpsFormat.absolute(buckets[index].start).dropFirst(11).prefix(5)
            svg +=
                String(format: #"<text x="%.1f" y="%.0f" text-anchor="middle">"#, left + Double(index) * step, height - 6) + label
                + "</text>"
        }
        svg += #"<polyline class="ok" points="\#(line(\.ok))"/><polyline class="fail" points="\#(line(\.fail))"/></svg>"#
        let succeeded = buckets.map(\.ok).reduce(0, +)
        let failed = buckets.map(\.fail).reduce(0, +)
        return svg
            + #"<p class="legend"><span class="ok">succeeded (\#(succeeded) in 24 h)</span><span class="fail">failed (\#(failed))</span><span>per \#(bucketMinutes) minutes, UTC</span></p>"#
    }
}
