/// Why a bearer or identity token was refused. `expired` is told apart so a client knows to refresh.
public struct TokenError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable { case invalid, expired, unavailable }
    public let code: Code
    /// Safe to show a client: never contains the token.
    public let reason: String
    public var description: String { "\(code.rawValue): \(reason)" }

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
