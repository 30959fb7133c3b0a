/// Why a bearer or identity token was refused. `expired` is told apart so a client knows to refresh.
package struct TokenError: Error, CustomStringConvertible, Sendable, Equatable {
    package enum Code: String, Sendable { case invalid, expired, unavailable }
    package let code: Code
    /// Safe to show a client: never contains the token.
    package let reason: String
    package var description: String { "\(code.rawValue): \(reason)" }

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
