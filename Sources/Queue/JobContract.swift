import Foundation
import JSON

/// What the producers and the handler of one job kind agree on: the kind's name (`jobs/<name>.yml`), the payload
/// the producers enqueue and the handler decodes, and the result the handler returns and readers decode. Declared
/// once: the application's contracts are generated from the kinds' files (`payload:` and `result:` of
/// `jobs/<name>.yml`, by the `JobContracts` target's build plugin), so no side can drift from the others, and the
/// same schema checks `Parameters` as ``payload(_:)`` writes them at every enqueue. Written by hand it reads:
///
/// ```swift
/// enum EmailContract: JobContract {
///     static let name = "email"
///     struct Parameters: Codable, Sendable { var to, subject, text: String }
///     struct Result: Codable, Sendable { var sent: Bool }
/// }
/// ```
public protocol JobContract {
    associatedtype Parameters: Codable & Sendable
    associatedtype Result: Codable & Sendable
    static var name: String { get }
    /// The payload of a job with these parameters: built by the parameters themselves when they can
    /// (``JSONValueConvertible``, as every generated contract's are), else through ``JSONValueEncoder``.
    static func payload(_ parameters: Parameters) throws -> JSONValue
}

extension JobContract {
    public static func payload(_ parameters: Parameters) throws -> JSONValue { try JSONValueEncoder().encode(parameters) }
}

extension JobContract where Parameters: JSONValueConvertible {
    public static func payload(_ parameters: Parameters) throws -> JSONValue { try parameters.jsonValue() }
}

extension JobRecord {
    /// The result the job's handler returned, typed by its contract; nil while it has none (not finished yet, failed,
    /// or its handler returned nothing). Throws a `DecodingError` when the stored result is not `C.Result`, or the
    /// job is of another kind.
    public func result<C: JobContract>(as contract: C.Type) throws -> C.Result? {
        guard let result else { return nil }
        guard kind == C.name else {
            throw DecodingError.typeMismatch(
                C.Result.self, .init(codingPath: [], debugDescription: "job \(id) is a '\(kind)' job, not '\(C.name)'"))
        }
        return try JSONValueDecoder().decode(C.Result.self, fromJSON: result)
    }
}
