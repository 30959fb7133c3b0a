import Foundation
import Testing

@testable import API

/// A text field is trimmed as Foundation's `.whitespacesAndNewlines` trims it: every ASCII character, and the
/// non-ASCII white space, at either end.
@Suite struct FieldTests {
    @Test func trimsAsFoundationDoes() {
        let edges = (0..<128).map { Character(Unicode.Scalar(UInt8($0))) } + ["\u{85}", "\u{A0}", "\u{2003}", "\u{3000}", "é", "🍎"]
        for edge in edges {
            for value in ["\(edge)x\(edge)", "\(edge)", "\(edge)\(edge)a b\(edge)"] {
                #expect(
                    Field.trimmingWhitespace(value) == value.trimmingCharacters(in: .whitespacesAndNewlines),
                    "U+\(String(edge.unicodeScalars.first!.value, radix: 16))")
            }
        }
    }
}
