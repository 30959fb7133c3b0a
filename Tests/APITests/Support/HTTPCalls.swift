import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JSON

/// A response as tests read it: status, headers, and the body as loosely typed JSON.
struct CallResult: Sendable {
    var status: Int
    var headers: HTTPFields
    var text: String

    var json: JSON { JSON(parsing: text) }
    var data: JSON { json["data"] }
    var errorCode: String? { json["error"]["code"].string }
}

extension TestClientProtocol {
    /// Calls `/api/mobile/v1/<path>` with an optional bearer token and JSON body.
    func call(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, json: Any? = nil, body: String? = nil,
        bytes: [UInt8]? = nil, headers: HTTPFields = [:]
    ) async throws -> CallResult {
        var fields = headers
        if let token { fields[.authorization] = "Bearer \(token)" }
        var buffer: ByteBuffer?
        if let json {
            buffer = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
            fields[.contentType] = "application/json"
        } else if let body {
            buffer = ByteBuffer(string: body)
        } else if let bytes {
            buffer = ByteBuffer(bytes: bytes)
        }
        let response = try await executeRequest(uri: "/api/mobile/v1/" + path, method: method, headers: fields, body: buffer)
        return CallResult(status: Int(response.status.code), headers: response.headers, text: String(buffer: response.body))
    }
}

/// Read-only access into parsed JSON: `result.json["data"]["meals"][0]["id"].int`; a missing member reads as
/// nil everywhere (and `exists` is false).
struct JSON: Sendable {
    private let value: JSONValue?

    init(parsing text: String) { value = try? JSONValue(parsing: text) }

    private init(value: JSONValue?) { self.value = value }

    subscript(key: String) -> JSON {
        guard case .object(let members) = value else { return JSON(value: nil) }
        return JSON(value: members[key])
    }

    subscript(index: Int) -> JSON {
        guard case .array(let items) = value, items.indices.contains(index) else { return JSON(value: nil) }
        return JSON(value: items[index])
    }

    var string: String? {
        if case .string(let text) = value { return text }
        return nil
    }
    var double: Double? {
        switch value {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }
    var int: Int? {
        switch value {
        case .int(let number): number
        case .double(let number) where number == number.rounded(): Int(number)
        default: nil
        }
    }
    var bool: Bool? {
        if case .bool(let flag) = value { return flag }
        return nil
    }
    var array: [JSON] {
        if case .array(let items) = value { return items.map { JSON(value: $0) } }
        return []
    }
    var keys: Set<String> {
        if case .object(let members) = value { return Set(members.keys) }
        return []
    }
    /// Present and JSON `null`.
    var isNull: Bool { value == .null }
    var exists: Bool { value != nil }
}
