/// A setting that is present but wrong. Start-up refuses it (exit 78, EX_CONFIG) naming the variable, instead of
/// running on a default the operator did not choose.
public struct SettingError: Error, CustomStringConvertible, Sendable {
    public let variable: String
    public let description: String

    /// `VARIABLE: reason`, the form of every refusal.
    public init(_ variable: String, _ reason: String) {
        self.variable = variable
        self.description = "\(variable): \(reason)"
    }

    /// A refusal whose wording is fixed elsewhere, kept verbatim (seed 001's `FATAL: JWT_SECRET environment variable MUST
    /// be set in production`).
    public init(_ variable: String, message: String) {
        self.variable = variable
        self.description = message
    }
}
