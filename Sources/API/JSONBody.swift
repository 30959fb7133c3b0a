import Foundation
import HTTPTypes
import Hummingbird
import JSON

/// Reads request bodies: size-checked before they are read whole, decoded strictly, every refusal a 4xx that
/// names the field.
enum JSONBody {
    /// Refuses a body over `limit` bytes with 413: by its Content-Length before reading anything, else as soon as
    /// the bytes read pass the limit.
    /// - Parameter tooLarge: the refusal, when the route states its limit otherwise (an image's decoded size).
    static func collect(_ request: Request, limit: Int, tooLarge oversize: APIError? = nil) async throws -> ByteBuffer {
        if let length = request.headers.value(.contentLength).flatMap(Int.init), length > limit {
            throw oversize ?? tooLarge(limit)
        }
        do {
            return try await request.body.collect(upTo: limit)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            // NIO's too-many-bytes error, from a body sent without Content-Length (chunked).
            throw oversize ?? tooLarge(limit)
        }
    }

    static func tooLarge(_ limit: Int) -> APIError {
        APIError(.contentTooLarge, "PAYLOAD_TOO_LARGE", "request body is larger than \(limit) bytes", details: ["limit": .int(limit)])
    }

    /// Decodes a JSON object into `T`. `allowedKeys` refuses fields the endpoint does not know (where silently
    /// ignoring one would mislead the client, e.g. a profile field it cannot change).
    /// - Parameter emptyIsObject: an empty body reads as `{}` (for endpoints whose fields are all optional).
    static func decode<T: Decodable>(
        _ type: T.Type, from request: Request, allowedKeys: Set<String>? = nil, limit: Int = APIContext.maxJSONBodyBytes,
        tooLarge oversize: APIError? = nil, emptyIsObject: Bool = false
    ) async throws -> T {
        let value = try await read(request, allowedKeys: allowedKeys, limit: limit, tooLarge: oversize, emptyIsObject: emptyIsObject)
        return try refusing { try decoder.decode(T.self, from: value) }
    }

    /// The same for a type that reads its own members (`JSONMembersDecodable`), with the same refusals as its
    /// `Decodable` twin: for the bodies every request of a hot endpoint sends.
    static func decode<T: JSONMembersDecodable>(
        _ type: T.Type, from request: Request, allowedKeys: Set<String>? = nil, limit: Int = APIContext.maxJSONBodyBytes,
        tooLarge oversize: APIError? = nil, emptyIsObject: Bool = false
    ) async throws -> T {
        let value = try await read(request, allowedKeys: allowedKeys, limit: limit, tooLarge: oversize, emptyIsObject: emptyIsObject)
        return try refusing { try decoder.decode(T.self, members: value) }
    }

    /// `body`'s value, or its decoding error as the 4xx that names the field.
    private static func refusing<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DecodingError {
            throw refusal(error)
        }
    }

    /// The body, read whole and parsed, refused if it holds U+0000 or (with `allowedKeys`) a field the endpoint does
    /// not know.
    private static func read(
        _ request: Request, allowedKeys: Set<String>?, limit: Int, tooLarge oversize: APIError?, emptyIsObject: Bool
    ) async throws -> JSONValue {
        let buffer = try await collect(request, limit: limit, tooLarge: oversize)
        let blank = buffer.readableBytesView.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        let value: JSONValue
        if blank {
            guard emptyIsObject else { throw APIError(.badRequest, "VALIDATION_ERROR", "request body must be a JSON object") }
            value = .object([:])
        } else {
            value = try refusing {
                try buffer.withUnsafeReadableBytes { bytes in
                    try JSONValueDecoder.parse { () throws(JSONParseError) in try JSONParser.parse(bytes) }
                }
            }
        }
        if let field = firstNUL(in: value) {
            throw APIError.validation(field, "field '\(field)' must not contain U+0000 (no text here can store it)")
        }
        // Sorted only to name the first unknown field the same way every time, so only when there is one.
        if let allowedKeys, case .object(let members) = value, !members.keys.allSatisfy(allowedKeys.contains),
            let unknown = members.keys.sorted().first(where: { !allowedKeys.contains($0) })
        {
            throw APIError.validation(unknown, "unknown field '\(unknown)'")
        }
        return value
    }

    /// The path of the first string (or member name) holding U+0000, which Postgres text cannot store: refused
    /// up front rather than failing the insert. The path is built only when one is found (every body is searched).
    static func firstNUL(in value: JSONValue) -> String? {
        guard let steps = nulSteps(in: value) else { return nil }
        var path = ""
        for step in steps.reversed() {
            switch step {
            case .member(let key): path += path.isEmpty ? key : ".\(key)"
            case .index(let index): path += "[\(index)]"
            }
        }
        return path
    }

    private enum PathStep {
        case member(String)
        case index(Int)
    }

    /// The steps to the first U+0000, innermost first; nil when there is none.
    private static func nulSteps(in value: JSONValue) -> [PathStep]? {
        switch value {
        case .string(let text): return text.utf8.contains(0) ? [] : nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if var found = nulSteps(in: item) {
                    found.append(.index(index))
                    return found
                }
            }
        case .object(let members):
            for (key, member) in members {
                if key.utf8.contains(0) { return [.member(key.replacingOccurrences(of: "\0", with: "\\u0000"))] }
                if var found = nulSteps(in: member) {
                    found.append(.member(key))
                    return found
                }
            }
        default: break
        }
        return nil
    }

    /// Dates are ISO 8601 date-times (`Timestamp.parse`); anything else is refused naming the field.
    static let decoder = JSONValueDecoder(dateParser: { Timestamp.parse($0) }, refusesUndeclaredNulls: true)

    static func refusal(_ error: DecodingError) -> APIError {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let keys = codingPath + (last.map { [$0] } ?? [])
            return keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingPrefix(".").description
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath, key)
            return .validation(field, "field '\(field)' is required")
        case .valueNotFound(_, let context):
            let field = path(context.codingPath)
            return .validation(field, "field '\(field)' must not be null")
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            if field.isEmpty { return APIError(.badRequest, "VALIDATION_ERROR", "request body must be a JSON object") }
            return .validation(field, "field '\(field)' must be \(describe(type))")
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty { return APIError(.badRequest, "VALIDATION_ERROR", "request body is not valid JSON") }
            return .validation(field, "field '\(field)' is invalid: \(context.debugDescription)")
        @unknown default:
            return APIError(.badRequest, "VALIDATION_ERROR", "request body is invalid")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type: "an integer"
        case is Double.Type: "a number"
        case is Bool.Type: "a boolean"
        case is [Any].Type: "an array"
        default: type == [String: Any].self ? "an object" : "of type \(type)"
        }
    }
}

/// Query parameters as bounded integers: anything else is a 400 naming the parameter.
extension Request {
    func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = uri.queryParameters[name[...]] else { return fallback }
        guard let value = Int(String(text)), range.contains(value) else {
            throw APIError.validation(name, "query parameter '\(name)' must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}
