import Foundation

/// A job's id: a random (version 4) UUID, so ids are unguessable and fit a Postgres `uuid` column
/// (effects are made idempotent by keying them on it).
public struct JobID: Sendable, Hashable, Codable, CustomStringConvertible, RawRepresentable {
    public let rawValue: String

    public init?(rawValue: String) {
        guard let uuid = UUID(uuidString: rawValue) else { return nil }
        self.rawValue = uuid.uuidString.lowercased()
    }

    init(trusted rawValue: String) { self.rawValue = rawValue }

    public static func random() -> JobID { JobID(trusted: UUID.randomV4().lowercasedString) }

    public var description: String { rawValue }
}

extension UUID {
    /// A random (version 4) UUID from the system's generator (`getrandom`). Foundation's `UUID()` on Linux opened
    /// `/dev/urandom` for each one, which showed in every enqueueing request's profile.
    public static func randomV4() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = raw[6] & 0x0F | 0x40  // version 4
            raw[8] = raw[8] & 0x3F | 0x80  // RFC 4122 variant
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }

    /// `uuidString` in lower case (as Postgres prints UUIDs), without the intermediate upper-case string.
    public var lowercasedString: String {
        let hex = Array("0123456789abcdef".utf8)
        return withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { output in
                var index = 0
                for (position, byte) in raw.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        output[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    output[index] = hex[Int(byte >> 4)]
                    output[index + 1] = hex[Int(byte & 0x0F)]
                    index += 2
                }
                return index
            }
        }
    }
}
