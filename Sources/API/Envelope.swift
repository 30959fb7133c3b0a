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
        let body = try encoder().encode(Success(data: data, meta: Meta(timestamp: Date())))
        return response(status: status, body: body, headers: headers)
    }

    static func failure(_ error: APIError) -> Response {
        let payload = Failure(error: .init(code: error.code, message: error.message, details: error.details), meta: Meta(timestamp: Date()))
        // Encoding strings and JSON values cannot fail; a fixed body keeps even that impossible case an envelope.
        let body = (try? encoder().encode(payload)) ?? Data(#"{"success":false,"error":{"code":"SERVER_ERROR","message":"Internal server error"}}"#.utf8)
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
    static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }

    static func parse(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}
