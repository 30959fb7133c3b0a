import CLibpq
import Foundation
import Logging

/// A statement parameter after encoding: text (nil is SQL NULL) and its type OID (0: inferred by the server).
struct EncodedParameter: Sendable {
    var text: String?
    var type: UInt32

    init(_ value: (any PostgresEncodable)?) {
        text = value?.postgresText
        type = value?.postgresType ?? 0
    }
}

/// One libpq connection, reconnected on demand. Every call blocks, so an instance lives on exactly one thread
/// (a `ConnectionThread`); it is deliberately not `Sendable`, so the compiler keeps it there.
final class PostgresConnection {
    var pg: OpaquePointer?
    let configuration: PostgresConfiguration
    let logger: Logger
    /// Bumped by every successful connect. A transaction remembers it, so a statement never runs on a new
    /// connection (outside the transaction) after the old one broke.
    private(set) var generation = 0
    private var failures = 0
    private var nextAttempt = ContinuousClock.now
    private var lastError: PostgresError?
    /// Statements prepared on the current connection, by SQL text and parameter types: a statement the
    /// application runs again skips the server's parse and plan (they die with the connection).
    private var prepared: [String: String] = [:]
    private var preparedGeneration = 0
    private var preparedCount = 0
    static let maxPreparedStatements = 500

    init(configuration: PostgresConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    deinit { close() }

    func close() {
        if let pg {
            PQfinish(pg)
            PostgresConnectionStats.openCount.wrappingSubtract(1, ordering: .relaxed)
        }
        pg = nil
    }

    /// Returns the generation of a usable connection, reconnecting when the old one broke (a terminated backend,
    /// a restarted server). Within the backoff window after a failed connect, fails fast with that error.
    @discardableResult
    func ensureConnected() throws(PostgresError) -> Int {
        if let pg {
            // Reading what is pending (without blocking) notices a backend that was terminated while idle.
            if PQstatus(pg) == CONNECTION_OK, PQconsumeInput(pg) == 1, PQstatus(pg) == CONNECTION_OK { return generation }
            logger.info("postgres connection lost; reconnecting", metadata: ["postgres": "\(configuration.displayAddress)"])
            close()
        }
        if let lastError, ContinuousClock.now < nextAttempt { throw lastError }
        if configuration.pooler != nil, configuration.searchPath != nil {
            throw PostgresError(
                .invalidURL, "a search_path is session state, which a transaction pooler does not keep: set it on the role instead")
        }
        do {
            try connect()
        } catch {
            failures += 1
            let delay = min(configuration.reconnectBase * (1 << min(failures - 1, 16)), configuration.reconnectMax)
            nextAttempt = ContinuousClock.now + delay
            lastError = error
            // Once per outage, not per try: the reconnects go on quietly until one succeeds.
            if failures == 1 {
                logger.warning(
                    "postgres unreachable; reconnecting",
                    metadata: ["postgres": "\(configuration.displayAddress)", "error": "\(error.message)"])
            }
            throw error
        }
        if failures > 0 {
            logger.info("postgres reconnected", metadata: ["postgres": "\(configuration.displayAddress)", "attempts": "\(failures)"])
        }
        failures = 0
        lastError = nil
        if generation > 0 { PostgresConnectionStats.reconnectCount.wrappingAdd(1, ordering: .relaxed) }
        generation += 1
        return generation
    }

    /// Throws unless the connection `generation` names is still the open one.
    func require(generation expected: Int) throws(PostgresError) {
        guard pg != nil, generation == expected else {
            throw PostgresError(.connection, "the connection was lost; the server rolled back its open transaction")
        }
    }

    /// Runs one statement with parameters (extended protocol: a single statement, parameters never spliced into SQL).
    func query(_ sql: String, _ parameters: [EncodedParameter]) throws(PostgresError) -> PostgresRows {
        let pg = try open()
        var buffer: [CChar] = []  // every parameter's text, NUL-terminated, back to back
        var offsets: [Int?] = []
        offsets.reserveCapacity(parameters.count)
        for parameter in parameters {
            guard let text = parameter.text else {
                offsets.append(nil)
                continue
            }
            guard !text.utf8.contains(0) else {
                throw PostgresError(
                    .protocolError, "parameter $\(offsets.count + 1) contains a NUL character, which PostgreSQL text cannot hold")
            }
            offsets.append(buffer.count)
            buffer.append(contentsOf: text.utf8.map { CChar(bitPattern: $0) })
            buffer.append(0)
        }
        let types = parameters.map(\.type)
        // Through a transaction pooler the next statement may reach another server connection, where a named
        // statement does not exist (or is another client's): there every statement is parsed unnamed, in the same
        // round trip as its run.
        let name = configuration.pooler == nil ? try preparedStatement(sql, types: types, on: pg) : nil
        let result = buffer.withUnsafeBufferPointer { texts in
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                guard let offset, let base = texts.baseAddress else { return nil }
                return base + offset
            }
            return values.withUnsafeBufferPointer { values in
                guard let name else {
                    return types.withUnsafeBufferPointer { types in
                        PQexecParams(pg, sql, Int32(parameters.count), types.baseAddress, values.baseAddress, nil, nil, 0)
                    }
                }
                return PQexecPrepared(pg, name, Int32(parameters.count), values.baseAddress, nil, nil, 0)
            }
        }
        do {
            return try consume(result)
        } catch let error where error.sqlState == "0A000" && error.message.contains("cached plan") {
            // The table under a prepared statement changed shape (a test or a migration re-created it): forget the
            // statement; the caller's next call prepares it afresh.
            prepared[Self.key(sql, types)] = nil
            throw error
        }
    }

    private static func key(_ sql: String, _ types: [UInt32]) -> String {
        types.isEmpty ? sql : sql + "\u{0}" + types.map(String.init).joined(separator: ",")
    }

    /// The name of `sql` prepared on this connection, preparing it the first time (`PQprepare` refuses several
    /// statements just as `PQexecParams` does, and parameters still never touch the SQL text).
    private func preparedStatement(_ sql: String, types: [UInt32], on pg: OpaquePointer) throws(PostgresError) -> String {
        if preparedGeneration != generation {
            prepared.removeAll()
            preparedGeneration = generation
        }
        let key = Self.key(sql, types)
        if let name = prepared[key] { return name }
        if prepared.count >= Self.maxPreparedStatements {
            _ = try consume(PQexec(pg, "DEALLOCATE ALL"))
            prepared.removeAll()
        }
        preparedCount += 1
        let name = "carbscan_\(preparedCount)"
        let result = types.withUnsafeBufferPointer { types in
            PQprepare(pg, name, sql, Int32(types.count), types.baseAddress)
        }
        _ = try consume(result)
        prepared[key] = name
        return name
    }

    /// Runs one or more statements with the simple-query protocol (no parameters).
    func script(_ sql: String) throws(PostgresError) {
        let pg = try open()
        _ = try consume(PQexec(pg, sql))
    }

    /// `COMMIT`, failing when PostgreSQL rolled back instead (an earlier statement of the transaction failed).
    func commit() throws(PostgresError) {
        let pg = try open()
        guard let result = PQexec(pg, "COMMIT") else { throw lost() }
        let tag = PQcmdStatus(result).map { String(cString: $0) }
        _ = try consume(result)
        if tag == "ROLLBACK" {
            throw PostgresError(.server, "the transaction was rolled back: a statement in it failed", sqlState: "25P02")
        }
    }

    /// Ends a transaction left open (a `BEGIN` sent through `query`), so the next borrower starts clean.
    func rollbackLeftoverTransaction() {
        guard let pg else { return }
        switch PQtransactionStatus(pg) {
        case PQTRANS_IDLE:
            return
        case PQTRANS_INTRANS, PQTRANS_INERROR:
            logger.warning("postgres connection returned inside a transaction; rolling it back")
            if (try? script("ROLLBACK")) == nil { close() }
        default:
            close()
        }
    }

    private func open() throws(PostgresError) -> OpaquePointer {
        guard let pg else { throw PostgresError(.connection, "not connected to \(configuration.displayAddress)") }
        return pg
    }

    /// Reads a result and frees it, or hands rows over with it (they free it). Errors that leave the connection broken
    /// drop it, so the next use reconnects.
    private func consume(_ result: OpaquePointer?) throws(PostgresError) -> PostgresRows {
        guard let result else { throw lost() }
        let status = PQresultStatus(result)
        if status == PGRES_TUPLES_OK || status == PGRES_SINGLE_TUPLE { return Self.rows(of: result) }
        defer { PQclear(result) }
        switch status {
        case PGRES_COMMAND_OK:
            return PostgresRows(storage: PostgresRows.empty.storage, affectedRows: Self.affectedRows(of: result))
        case PGRES_EMPTY_QUERY:
            return .empty
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR, PGRES_BAD_RESPONSE:
            throw error(from: result)
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            // The connection now waits for COPY data this wrapper never sends: drop it rather than leave it stuck.
            close()
            throw PostgresError(.protocolError, "COPY is not supported; the connection was reset")
        default:
            throw PostgresError(.protocolError, "unexpected result status \(String(cString: PQresStatus(status)))")
        }
    }

    private func error(from result: OpaquePointer) -> PostgresError {
        func field(_ code: UInt8) -> String? {
            PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
        }
        let sqlState = field(UInt8(ascii: "C"))  // PG_DIAG_SQLSTATE
        let primary = field(UInt8(ascii: "M"))  // PG_DIAG_MESSAGE_PRIMARY
        let message = primary ?? Self.clean(PQresultErrorMessage(result))
        var error = PostgresError(
            .server, message.isEmpty ? "unknown server error" : message, sqlState: sqlState,
            detail: field(UInt8(ascii: "D")), constraint: field(UInt8(ascii: "n")))
        let broken = pg.map { PQstatus($0) != CONNECTION_OK } ?? true
        if broken || sqlState?.hasPrefix("08") == true || sqlState?.hasPrefix("57P0") == true {
            close()
            error.code = .connection
            if primary == nil { error.message = "\(configuration.displayAddress): \(message.isEmpty ? "connection lost" : message)" }
        } else if sqlState == "57014" {
            error.code = .timeout
        }
        return error
    }

    private func lost() -> PostgresError {
        let message = pg.map { Self.clean(PQerrorMessage($0)) } ?? ""
        close()
        return PostgresError(.connection, "\(configuration.displayAddress): \(message.isEmpty ? "connection lost" : message)")
    }

    /// The rows of `result`, which they take over.
    private static func rows(of result: OpaquePointer) -> PostgresRows {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var columns: [String] = []
        var types: [UInt32] = []
        for column in 0..<Int32(columnCount) {
            columns.append(PQfname(result, column).map { String(cString: $0) } ?? "?column?")
            types.append(PQftype(result, column))
        }
        let affectedRows = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? rowCount
        let storage = PostgresRows.Storage(columns: columns, types: types, result: result, count: rowCount)
        return PostgresRows(storage: storage, affectedRows: affectedRows)
    }

    private static func affectedRows(of result: OpaquePointer) -> Int {
        PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
    }

    static func clean(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "" }
        return String(cString: message).split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: "; ")
    }
}
