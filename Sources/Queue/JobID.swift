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

    public static func random() -> JobID { JobID(trusted: UUID().uuidString.lowercased()) }

    public var description: String { rawValue }
}
