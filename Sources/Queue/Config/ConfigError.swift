/// Why a job-kind file was refused, pointing at the offending node so an operator can fix it at once.
///
/// `description` reads like a compiler diagnostic, e.g.
/// `jobs/analysis.yml:4:10: timeout: expected a duration such as 500ms, 30s, 5m, 1h, 2d; got 'abc'`.
public struct ConfigError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The file the error is in (as given to the loader).
    public var file: String
    /// 1-based line of the offending node, when known.
    public var line: Int?
    /// 1-based column of the offending node, when known.
    public var column: Int?
    /// What is wrong, starting with the key path (`backoff.base: …`).
    public var reason: String

    public init(file: String, line: Int? = nil, column: Int? = nil, reason: String) {
        self.file = file
        self.line = line
        self.column = column
        self.reason = reason
    }

    public var description: String {
        var location = file
        if let line {
            location += ":\(line)"
            if let column { location += ":\(column)" }
        }
        return "\(location): \(reason)"
    }
}
