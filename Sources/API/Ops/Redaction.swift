import Foundation
import JSON

/// Hides secret-looking values before the dashboard shows a payload or a result: any member whose name contains
/// one of ``markers`` (case-insensitive), at any depth, shows as `[redacted]`.
enum Redaction {
    static let markers = [
        "password", "passwd", "secret", "token", "key", "authorization", "auth", "refresh", "cookie", "credential",
        "signature", "session", "otp", "pin",
    ]
    static let placeholder = "[redacted]"

    static func isSecret(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return markers.contains { lowered.contains($0) }
    }

    static func redact(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            .object(
                members.reduce(into: [:]) { out, member in
                    out[member.key] = isSecret(member.key) ? .string(placeholder) : redact(member.value)
                })
        case .array(let items): .array(items.map(redact))
        default: value
        }
    }

    /// JSON text redacted and indented for reading; text that is not JSON is not shown at all (it could be anything).
    static func display(_ json: String?) -> String? {
        guard let json else { return nil }
        guard let value = try? JSONParser.parse(json) else { return "(not JSON: \(json.utf8.count) bytes, not shown)" }
        let compact = redact(value).jsonString
        guard let object = try? JSONSerialization.jsonObject(with: Data(compact.utf8), options: [.fragmentsAllowed]),
            let pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed])
        else { return compact }
        return String(decoding: pretty, as: UTF8.self)
    }
}
