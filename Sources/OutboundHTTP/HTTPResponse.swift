import CCurl
import Foundation

/// A complete HTTP response. Any status, 4xx and 5xx included, is a response, not an error.
package struct HTTPResponse: Sendable {
    package var status: Int
    /// In the order received, names as sent by the server; interim (1xx) responses' headers are dropped.
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header of that name, compared case-insensitively.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// `Retry-After` as delta-seconds or an HTTP-date (RFC 9110 §10.2.3), relative to `now`;
    /// nil when absent or unparseable; never negative (a date in the past gives zero).
    package func retryAfter(now: Date = Date()) -> Duration? {
        guard let value = header("Retry-After")?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // An absurdly large delay is still a delay: clamp instead of failing on overflow.
            return .seconds(Int64(value) ?? Int64.max)
        }
        // curl_getdate reads all three HTTP-date forms (IMF-fixdate, RFC 850, asctime); -1 means unparseable.
        let date = curl_getdate(value, nil)
        guard date != -1 else { return nil }
        let milliseconds = (Double(date) - now.timeIntervalSince1970) * 1000
        return .milliseconds(Int64(max(0, milliseconds.rounded())))
    }
}
