import Foundation
import HTTPTypes
import Hummingbird
import Queue

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

    /// One encoder for every response (its configuration never changes after this).
    static let shared = encoder()

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static func success<Data: Encodable>(_ data: Data, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        let body = try shared.encode(Success(data: data, meta: Meta(timestamp: Date())))
        return response(status: status, body: body, headers: headers)
    }

    static func failure(_ error: APIError) -> Response {
        let payload = Failure(error: .init(code: error.code, message: error.message, details: error.details), meta: Meta(timestamp: Date()))
        // Encoding strings and JSON values cannot fail; a fixed body keeps even that impossible case an envelope.
        let body = (try? shared.encode(payload)) ?? Data(#"{"success":false,"error":{"code":"SERVER_ERROR","message":"Internal server error"}}"#.utf8)
        return response(status: error.status, body: body, headers: error.headers)
    }

    static func response(status: HTTPResponse.Status, body: Data, headers: HTTPFields) -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// ISO 8601 timestamps with milliseconds in UTC, as the seed writes them: `2025-11-19T12:00:00.000Z`.
enum Timestamp {
    /// Formats by arithmetic (the civil-from-days algorithm of H. Hinnant): a meal page writes dozens of dates per
    /// response, and Foundation's format styles cost several microseconds each.
    static func format(_ date: Date) -> String {
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (days, millisecondOfDay) = totalMilliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        let (day, milliseconds) = millisecondOfDay < 0 ? (days - 1, millisecondOfDay + 86_400_000) : (days, millisecondOfDay)
        let z = day + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let dayOfMonth = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        func append(_ value: Int64, digits: Int) {
            var divisor: Int64 = 1
            for _ in 1..<digits { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        append(year, digits: 4)
        bytes.append(UInt8(ascii: "-"))
        append(month, digits: 2)
        bytes.append(UInt8(ascii: "-"))
        append(dayOfMonth, digits: 2)
        bytes.append(UInt8(ascii: "T"))
        append(milliseconds / 3_600_000, digits: 2)
        bytes.append(UInt8(ascii: ":"))
        append(milliseconds / 60_000 % 60, digits: 2)
        bytes.append(UInt8(ascii: ":"))
        append(milliseconds / 1000 % 60, digits: 2)
        bytes.append(UInt8(ascii: "."))
        append(milliseconds % 1000, digits: 3)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    static func parse(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}
