import Foundation
import HTTPTypes
import Hummingbird
import JSON

/// The seed's response envelope: `{success, data | error, meta: {timestamp, version}}`.
enum Envelope {
    struct Meta: Encodable {
        var timestamp: Date
        var version = "v1"
    }

    struct Success<Data: Encodable>: Encodable {
        var success = true
        var data: Data
        var meta: Meta
    }

    struct Failure: Encodable {
        struct Body: Encodable {
            var code: String
            var message: String
            var details: [String: JSONValue]?
        }
        var success = false
        var error: Body
        var meta: Meta
    }

    static func success<Data: Encodable>(_ data: Data, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        response(status: status, body: try successBytes(data), headers: headers)
    }

    /// A success envelope's bytes, for an answer that is also stored (an `Idempotency-Key` replay).
    ///
    /// The frame around `data` is written by hand, byte for byte what encoding ``Success`` writes
    /// (`EnvelopeTests` holds the two to one output): through Codable, the generic envelope and its `meta` cost two
    /// boxed keyed containers and their metadata lookups on every response, a third of `POST /logins`'s encoding.
    static func successBytes<Data: Encodable>(_ data: Data, at now: Date = Date()) throws -> [UInt8] {
        var bytes = try StreamingJSONEncoder.api.encode(data, after: successHead)
        bytes.append(contentsOf: metaHead)
        Timestamp.write(now, into: &bytes)
        bytes.append(contentsOf: metaTail)
        return bytes
    }

    private static let successHead = Array(#"{"success":true,"data":"#.utf8)
    private static let metaHead = Array(#","meta":{"timestamp":""#.utf8)
    private static let metaTail = Array(#"","version":"v1"}}"#.utf8)

    static func failure(_ error: APIError) -> Response {
        let payload = Failure(error: .init(code: error.code, message: error.message, details: error.details), meta: Meta(timestamp: Date()))
        // Encoding strings and JSON values cannot fail; a fixed body keeps even that impossible case an envelope.
        let body =
            (try? StreamingJSONEncoder.api.encode(payload))
            ?? Array(#"{"success":false,"error":{"code":"SERVER_ERROR","message":"Internal server error"}}"#.utf8)
        return response(status: error.status, body: body, headers: error.headers)
    }

    static func response(status: HTTPResponse.Status, body: [UInt8], headers: HTTPFields) -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

extension StreamingJSONEncoder {
    /// The API's response encoder: dates as the seed writes them (`Timestamp`).
    static let api = StreamingJSONEncoder(writeDate: { date, bytes in Timestamp.write(date, into: &bytes) })
}

/// ISO 8601 timestamps with milliseconds in UTC, as the seed writes them: `2025-11-19T12:00:00.000Z`.
enum Timestamp {
    /// Formats by arithmetic (the engine's `CivilTime`): a meal page writes dozens of dates per response, and
    /// Foundation's format styles cost several microseconds each.
    static func format(_ date: Date) -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        write(date, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `format`, appended to `bytes` (the response encoder writes dates straight into its output). The 24 characters
    /// are written into a buffer on the stack and appended at once: appending them one by one checked the array's
    /// capacity and uniqueness 24 times, and a page of meals writes 41 dates.
    static func write(_ date: Date, into bytes: inout [UInt8]) {
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (seconds, milliseconds) = totalMilliseconds.quotientAndRemainder(dividingBy: 1000)
        let (wholeSeconds, millisecond) = milliseconds < 0 ? (seconds - 1, milliseconds + 1000) : (seconds, milliseconds)
        let civil = CivilTime(secondsAsUTC: Int(wholeSeconds))
        let second = Int(((wholeSeconds % 60) + 60) % 60)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { text in
            var end = 0
            func append(_ value: Int, digits: Int, then separator: UInt8) {
                var rest = value
                for index in stride(from: end + digits - 1, through: end, by: -1) {
                    text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                text[end + digits] = separator
                end += digits + 1
            }
            append(civil.year, digits: 4, then: UInt8(ascii: "-"))
            append(civil.month, digits: 2, then: UInt8(ascii: "-"))
            append(civil.day, digits: 2, then: UInt8(ascii: "T"))
            append(civil.hour, digits: 2, then: UInt8(ascii: ":"))
            append(civil.minute, digits: 2, then: UInt8(ascii: ":"))
            append(second, digits: 2, then: UInt8(ascii: "."))
            append(Int(millisecond), digits: 3, then: UInt8(ascii: "Z"))
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[..<end]))
        }
    }

    /// An RFC 3339 date-time (``RFC3339``), with or without a fraction, in any offset.
    static func parse(_ text: String) -> Date? { RFC3339.parse(text) }
}
