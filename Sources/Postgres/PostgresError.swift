/// Why a Postgres call failed. `code` tells callers whether retrying can help; the server's diagnostics
/// (`sqlState`, `detail`, `constraint`) come straight from libpq's `PQresultErrorField`.
package struct PostgresError: Error, CustomStringConvertible, Sendable {
    package enum Code: Sendable, Hashable {
        /// The server could not be reached, or the connection broke; the statement may or may not have run.
        case connection
        /// The server answered with an error (constraint violation, syntax error, …). See `sqlState`.
        case server
        /// The statement ran longer than the statement timeout, or was cancelled (SQLSTATE 57014).
        case timeout
        /// A value could not be decoded into the requested Swift type, or the column does not exist.
        case decoding
        /// The client was shut down, or a transaction was used after it ended.
        case closed
        case invalidURL
        /// libpq returned something this wrapper does not handle (a `COPY` result, no result at all).
        case protocolError
    }

    package var code: Code
    package var message: String
    /// The five-character SQLSTATE, when the server sent one (`23505` unique violation, `57014` timeout, …).
    package var sqlState: String?
    package var detail: String?
    /// The violated constraint's name, for integrity errors.
    package var constraint: String?

    package init(_ code: Code, _ message: String, sqlState: String? = nil, detail: String? = nil, constraint: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.constraint = constraint
    }

    package var isUniqueViolation: Bool { sqlState == "23505" }

    /// True when retrying later may succeed (the server was away or slow, not wrong).
    package var isTransient: Bool { code == .connection || code == .timeout }

    /// True when the server is unreachable, shutting down or starting up (a broken connection, SQLSTATE class 08 or
    /// 57P0x are all `.connection`): nothing about the statement was wrong, and it can succeed once the server is
    /// back. A statement timeout is not an outage.
    package var isOutage: Bool { code == .connection }

    package var description: String {
        var text = "postgres \(code): \(message)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let detail { text += " — \(detail)" }
        return text
    }
}
