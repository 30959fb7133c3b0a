import Foundation

/// An `application/x-www-form-urlencoded` body, as the dashboard's forms send it: repeated names (`id=…&id=…`) kept.
struct OpsForm: Sendable {
    var pairs: [(name: String, value: String)]

    init(_ bytes: some Sequence<UInt8>) {
        let text = String(decoding: Array(bytes), as: UTF8.self)
        pairs = text.split(separator: "&").compactMap { part in
            let halves = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(halves[0]) else { return nil }
            return (name, halves.count > 1 ? Self.decode(halves[1]) ?? "" : "")
        }
    }

    subscript(name: String) -> String? { pairs.first { $0.name == name }?.value }

    func all(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
