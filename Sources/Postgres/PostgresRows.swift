import CLibpq

/// The rows a statement returned: libpq's result, owned and read in place, its cells decoded as they are asked for.
package struct PostgresRows: Sendable, RandomAccessCollection {
    /// Column metadata and libpq's result, shared by the rows; the result is freed with the last of them.
    ///
    /// Read in place rather than copied out cell by cell into strings when the statement returned: a page of 20
    /// meals is 280 cells, most of them timestamps, numbers and NULLs that are never a `String` when decoded (perf,
    /// 2026-11-29). A `PGresult` is not changed once made and does not depend on its connection, so reading it from
    /// any thread after the connection moved on is what libpq allows.
    @usableFromInline
    final class Storage: @unchecked Sendable {
        @usableFromInline let columns: [String]
        @usableFromInline let types: [UInt32]
        /// The first column of each name, for a result wider than ``scannedColumns`` (nil for a narrower one).
        let indexByName: [String: Int]?
        /// libpq's `PGresult`; nil for no rows.
        private let result: OpaquePointer?
        let count: Int

        /// Takes over `result` (freed with the storage).
        init(columns: [String], types: [UInt32], result: OpaquePointer?, count: Int) {
            self.columns = columns
            self.types = types
            self.result = result
            self.count = count
            if columns.count > Self.scannedColumns {
                var indexByName: [String: Int] = [:]
                for (index, name) in columns.enumerated() where indexByName[name] == nil { indexByName[name] = index }
                self.indexByName = indexByName
            } else {
                indexByName = nil
            }
        }

        deinit { if let result { PQclear(result) } }

        /// The bytes of the cell at `row`, `column` (in range), nil for SQL NULL, for as long as the storage lives.
        @usableFromInline
        func cell(_ row: Int, _ column: Int) -> UnsafeBufferPointer<UInt8>? {
            guard let result, PQgetisnull(result, Int32(row), Int32(column)) == 0 else { return nil }
            let bytes = PQgetvalue(result, Int32(row), Int32(column)).map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }
            return UnsafeBufferPointer(start: bytes, count: Int(PQgetlength(result, Int32(row), Int32(column))))
        }

        /// Up to this many columns a name is found by comparing it with each, not by hashing it. A page of 20 meals
        /// looks up 220 names; hashing them, and building the dictionary per result, was 3% of `GET /meals`'s CPU
        /// (perf, 2026-11-28). Names are compared only where their lengths agree (a string's length is stored): a
        /// mismatched `==` still costs a call into the runtime's comparison, and most columns differ in length.
        static let scannedColumns = 16

        /// The first column named `name` (a query may repeat names; `decode(_ column: String)` takes the first).
        @usableFromInline
        func index(of name: String) -> Int? {
            if let indexByName { return indexByName[name] }
            let length = name.utf8.count
            return columns.firstIndex { $0.utf8.count == length && $0 == name }
        }
    }

    let storage: Storage
    /// Rows inserted, updated, deleted or returned (libpq's `PQcmdTuples`).
    package let affectedRows: Int

    init(storage: Storage, affectedRows: Int) {
        self.storage = storage
        self.affectedRows = affectedRows
    }

    static let empty = PostgresRows(storage: Storage(columns: [], types: [], result: nil, count: 0), affectedRows: 0)

    package var columns: [String] { storage.columns }
    package var startIndex: Int { 0 }
    package var endIndex: Int { storage.count }
    package subscript(position: Int) -> PostgresRow {
        precondition(indices.contains(position), "row \(position) out of range 0..<\(storage.count)")
        return PostgresRow(storage: storage, row: position)
    }
}

/// One result row; read its columns with `decode`.
///
/// The common column types have concrete `decode` overloads (`PostgresRow+Concrete.swift`), which the type checker
/// prefers: the generic one reaches other modules unspecialized, though inlinable.
package struct PostgresRow: Sendable {
    @usableFromInline let storage: PostgresRows.Storage
    @usableFromInline let row: Int

    package var columns: [String] { storage.columns }

    /// Decodes the column named `column`. NULL decodes into an `Optional` only; otherwise it is a `.decoding` error.
    @inlinable
    package func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        try value(column, as: type)
    }

    /// `decode(_:as:)`'s body, under a name the concrete overloads can call without choosing themselves.
    @inlinable
    func value<T: PostgresDecodable>(_ column: String, as type: T.Type) throws(PostgresError) -> T {
        guard let index = storage.index(of: column) else { throw missingColumn(column) }
        return try value(at: index, as: type)
    }

    /// Decodes the column at `index` (0-based).
    @inlinable
    package func decode<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws(PostgresError) -> T {
        try value(at: index, as: type)
    }

    /// `decode(_:as:)`'s body for a column's index, under a name the concrete overloads can call.
    @inlinable
    func value<T: PostgresDecodable>(at index: Int, as type: T.Type) throws(PostgresError) -> T {
        guard storage.columns.indices.contains(index) else { throw missingColumn(index) }
        guard let bytes = storage.cell(row, index) else {
            guard let null = T.postgresNull else { throw unexpectedNull(index, T.self) }
            return null
        }
        guard let value = withExtendedLifetime(storage, { T(postgresBytes: bytes, type: storage.types[index]) }) else {
            throw undecodable(index, String(decoding: bytes, as: UTF8.self), T.self)
        }
        return value
    }

    @usableFromInline
    func missingColumn(_ column: String) -> PostgresError {
        PostgresError(.decoding, "no column '\(column)' in the result (columns: \(storage.columns.joined(separator: ", ")))")
    }

    @usableFromInline
    func missingColumn(_ index: Int) -> PostgresError {
        PostgresError(.decoding, "no column \(index) in the result (it has \(storage.columns.count))")
    }

    @usableFromInline
    func unexpectedNull(_ index: Int, _ type: Any.Type) -> PostgresError {
        PostgresError(.decoding, "column '\(storage.columns[index])' is NULL; decode it as \(type)? to accept NULL")
    }

    @usableFromInline
    func undecodable(_ index: Int, _ text: String, _ type: Any.Type) -> PostgresError {
        let shown = text.count > 40 ? text.prefix(40) + "…" : text[...]
        return PostgresError(.decoding, "column '\(storage.columns[index])': cannot decode '\(shown)' as \(type)")
    }

    /// The index of the first column named `name`.
    package func index(of name: String) -> Int? { storage.index(of: name) }

    /// True when the column at `index` is SQL NULL.
    package func isNull(_ index: Int) -> Bool {
        storage.columns.indices.contains(index) && storage.cell(row, index) == nil
    }
}
