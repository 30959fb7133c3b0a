import Foundation
import Testing

/// A scrape's text, read as series: `name{labels}` → value.
struct Scrape {
    let text: String

    /// The value of the sample whose name and labels are exactly `series` (labels in the order they are emitted).
    func value(_ name: String, _ labels: [(String, String)] = []) -> Double? {
        let wanted = Set(labels.map { "\($0.0)=\"\($0.1)\"" })
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            let series = line[..<space]
            let sampleName: Substring
            var sampleLabels: Set<String> = []
            if let brace = series.firstIndex(of: "{") {
                sampleName = series[..<brace]
                let inner = series[series.index(after: brace)..<series.index(before: series.endIndex)]
                sampleLabels = Set(inner.split(separator: ",").map(String.init))
            } else {
                sampleName = series
            }
            if sampleName == name && sampleLabels == wanted { return Double(line[line.index(after: space)...]) }
        }
        return nil
    }

    /// Every label value that appears in the text, but histogram bucket bounds (`le`).
    var labelValues: Set<String> {
        var values: Set<String> = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}") else { continue }
            for pair in line[line.index(after: open)..<close].split(separator: ",") {
                if let eq = pair.firstIndex(of: "="), pair[..<eq] != "le" {
                    values.insert(String(pair[pair.index(eq, offsetBy: 2)..<pair.index(before: pair.endIndex)]))
                }
            }
        }
        return values
    }
}
