import Foundation

/// A JSON object's members read one by one by a type's own `init(members:)` (``JSONMembersDecodable``), for bodies
/// read on every request: Codable's containers around them (the `Decoder` existential, the keyed container's box, the
/// lookup of ``NullableMembers``) were most of decoding `POST /logins`'s body, 1.6% of its CPU (perf, 2026-11-29).
///
/// Each read goes through ``JSONValueDecoder``'s own nodes, so a value and a refusal (the same `DecodingError`, at
/// the same path) are what the decoder gives the type's `Decodable` twin, `refusesUndeclaredNulls` on. A type reads its
/// members in its declaration order, as a synthesized `init(from:)` does, so that the first refusal is the same.
public struct JSONMembers {
    private let keyed: Keyed<MemberKey>

    /// `value`'s members; anything but an object is refused as `Decodable` refuses it. Of its optional members only
    /// `nullable` may be `null`.
    public init(_ value: JSONValue, decoder: JSONValueDecoder, nullable: Set<String>) throws {
        guard case .object(let members) = value else {
            throw DecoderNode(value: value, parentPath: [], key: nil, decoder: decoder).mismatch([String: Any].self)
        }
        keyed = Keyed(members: members, codingPath: [], decoder: decoder, nullable: nullable)
    }

    /// A member that must be a string.
    public func string(_ name: String) throws -> String { try keyed.decode(String.self, forKey: MemberKey(name)) }

    /// A string member that may be missing (nil), or `null` if it is one of the nullable.
    public func optionalString(_ name: String) throws -> String? {
        try keyed.decodeIfPresent(String.self, forKey: MemberKey(name))
    }

    /// A member that must be a date-time, as the decoder's `dateParser` reads it.
    public func date(_ name: String) throws -> Date { try keyed.decode(Date.self, forKey: MemberKey(name)) }
}

/// A type read from a JSON object by ``JSONMembers`` rather than through Codable.
public protocol JSONMembersDecodable {
    /// The members this type may receive as `null` (its optional members that say so).
    static var nullableMembers: Set<String> { get }

    init(members: JSONMembers) throws
}

extension JSONValueDecoder {
    /// `T` read from `value` by its own `init(members:)`: the same value, or the same refusal, as its `Decodable`
    /// twin would give here with `refusesUndeclaredNulls`.
    public func decode<T: JSONMembersDecodable>(_ type: T.Type, members value: JSONValue) throws -> T {
        try T(members: JSONMembers(value, decoder: self, nullable: T.nullableMembers))
    }
}
