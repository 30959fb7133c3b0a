import CLibpq
import Durations
import Foundation
import Logging

extension PostgresConnection {
    /// Opens a new connection within `connectTimeout` (libpq's own `connect_timeout` has whole-second granularity
    /// and a 2-second floor, so the handshake is driven with `PQconnectPoll` and `poll`).
    func connect() throws(PostgresError) {
        close()
        let parameters = connectionParameters()
        let connection = withCStrings(parameters.map(\.0)) { keywords in
            withCStrings(parameters.map(\.1)) { values in PQconnectStartParams(keywords, values, 0) }
        }
        guard let connection else { throw PostgresError(.connection, "cannot allocate a libpq connection") }
        do throws(PostgresError) {
            try poll(connection)
        } catch {
            PQfinish(connection)
            throw error
        }
        PQsetNoticeReceiver(
            connection,
            { context, result in
                guard let context, let result else { return }
                Unmanaged<PostgresConnection>.fromOpaque(context).takeUnretainedValue().notice(result)
            }, Unmanaged.passUnretained(self).toOpaque())
        pg = connection
        PostgresConnectionStats.openCount.wrappingAdd(1, ordering: .relaxed)
        logger.debug("postgres connected", metadata: ["postgres": "\(configuration.displayAddress)"])
    }

    private func poll(_ connection: OpaquePointer) throws(PostgresError) {
        let deadline = ContinuousClock.now + configuration.connectTimeout
        // As the libpq manual says: start as if PQconnectPoll had asked to wait for the socket to be writable.
        var state = PGRES_POLLING_WRITING
        while true {
            switch state {
            case PGRES_POLLING_OK:
                return
            case PGRES_POLLING_FAILED:
                throw PostgresError(.connection, "connect to \(configuration.displayAddress): \(Self.clean(PQerrorMessage(connection)))")
            default:
                let remaining = deadline - ContinuousClock.now
                guard remaining > .zero else {
                    throw PostgresError(
                        .connection, "connect to \(configuration.displayAddress): timed out after \(configuration.connectTimeout)")
                }
                let events = Int16(state == PGRES_POLLING_READING ? POLLIN : POLLOUT)
                var descriptor = pollfd(fd: PQsocket(connection), events: events, revents: 0)
                let milliseconds = Int32(clamping: remaining.milliseconds + 1)
                let ready = Glibc.poll(&descriptor, 1, milliseconds)
                if ready <= 0 { continue }  // timeout (checked above) or EINTR
                state = PQconnectPoll(connection)
            }
        }
    }

    /// libpq connection keywords. Session settings go in the startup packet (`options`), so `RESET` returns to them.
    private func connectionParameters() -> [(String, String)] {
        var parameters: [(String, String)] = [
            ("host", configuration.host), ("port", String(configuration.port)),
            ("application_name", configuration.applicationName), ("client_encoding", "UTF8"),
            // Notice a vanished server or a dead network while idle, not only on the next query.
            ("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
        ]
        if let username = configuration.username { parameters.append(("user", username)) }
        if let password = configuration.password { parameters.append(("password", password)) }
        if let database = configuration.database { parameters.append(("dbname", database)) }
        if let sslMode = configuration.sslMode { parameters.append(("sslmode", sslMode)) }
        if configuration.pooler != nil {
            // A transaction pooler refuses `options` and would hand its settings to other clients: `TimeZone` and
            // `DateStyle` go as startup parameters the pooler tracks per client (see `PostgresPooler`); bytea and
            // floats are read right at PostgreSQL's defaults (hex; shortest exact since PostgreSQL 12).
            _ = Self.sendPoolerStartupParameters
            return parameters
        }
        // The decoders read ISO timestamps in UTC, hex bytea, and floats printed exactly.
        var settings = [("TimeZone", "UTC"), ("DateStyle", "ISO"), ("bytea_output", "hex"), ("extra_float_digits", "3")]
        if configuration.genericPlans { settings.append(("plan_cache_mode", "force_generic_plan")) }
        if let timeout = configuration.statementTimeout {
            settings.append(("statement_timeout", String(max(timeout.millisecondsRoundedUp, 0))))
        }
        if let searchPath = configuration.searchPath { settings.append(("search_path", searchPath)) }
        parameters.append(("options", settings.map { "-c \(Self.escapeOption($0.0))=\(Self.escapeOption($0.1))" }.joined(separator: " ")))
        return parameters
    }

    /// libpq puts `PGTZ` and `PGDATESTYLE` in the startup packet (it has no connection keyword for them), where
    /// PgBouncer accepts them and sets them on whichever server connection it lends. Set once, before the first
    /// connect, and for the whole process: every connection of the process wants UTC and ISO.
    static let sendPoolerStartupParameters: Void = {
        setenv("PGTZ", "UTC", 1)
        setenv("PGDATESTYLE", "ISO", 1)
    }()

    /// In libpq's `options`, spaces separate arguments unless escaped with a backslash.
    private static func escapeOption(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing(" ", with: "\\ ")
    }

    /// Server notices (`NOTICE: relation already exists, skipping`, warnings) go to the logger, not stderr.
    fileprivate func notice(_ result: OpaquePointer) {
        let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))).map { String(cString: $0) } ?? "NOTICE"
        let message = Self.clean(PQresultErrorMessage(result))
        let level: Logger.Level = severity == "WARNING" ? .warning : .debug
        logger.log(level: level, "postgres \(severity.lowercased()): \(message)")
    }
}

/// Calls `body` with a NULL-terminated array of C strings that live for the call.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { for copy in copies { free(copy) } }
    let pointers = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
