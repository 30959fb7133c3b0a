/// A value that builds its ``JSONValue`` tree itself, without Codable: the job contracts' generated types
/// (`JobCodegen`), so that a typed enqueue skips ``JSONValueEncoder``. Through the encoder's keyed containers, the
/// `login-webhook` parameters of `POST /logins` cost 3.3% of the API's CPU per request (perf, 2026-11-29). The tree
/// is the one ``JSONValueEncoder`` makes of the same value (contract tests hold the two to one output); a non-finite
/// number throws here too, without the member's coding path.
public protocol JSONValueConvertible {
    func jsonValue() throws -> JSONValue
}

extension JSONValue: JSONValueConvertible {
    public func jsonValue() -> JSONValue { self }
}

extension String: JSONValueConvertible {
    public func jsonValue() -> JSONValue { .string(self) }
}

extension Bool: JSONValueConvertible {
    public func jsonValue() -> JSONValue { .bool(self) }
}

extension Int: JSONValueConvertible {
    public func jsonValue() -> JSONValue { .int(self) }
}

extension Int64: JSONValueConvertible {
    public func jsonValue() -> JSONValue { .int(Int(self)) }
}

extension Double: JSONValueConvertible {
    public func jsonValue() throws -> JSONValue {
        guard isFinite else {
            throw EncodingError.invalidValue(self, .init(codingPath: [], debugDescription: "Unable to encode \(self) directly in JSON."))
        }
        return .double(self)
    }
}

extension Array: JSONValueConvertible where Element: JSONValueConvertible {
    public func jsonValue() throws -> JSONValue { .array(try map { try $0.jsonValue() }) }
}

extension Dictionary: JSONValueConvertible where Key == String, Value: JSONValueConvertible {
    public func jsonValue() throws -> JSONValue { .object(try mapValues { try $0.jsonValue() }) }
}
