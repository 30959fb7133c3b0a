/// The rows a statement returned, copied out of libpq's result (so they outlive it and cross threads).
package struct PostgresRows: Sendable, RandomAccessCollection {
    /// Column metadata and every cell, row-major, shared by the rows.
    @usableFromInline
    final class Storage: Sendable {
        @usableFromInline let columns: [String]
        @usableFromInline let types: [UInt32]
        /// The first column of each name, for a result wider than ``scannedColumns`` (nil for a narrower one).
        let indexByName: [String: Int]?
        @usableFromInline let cells: [String?]
        let count: Int

        init(columns: [String], types: [UInt32], cells: [String?], count: Int) {
            self.columns = columns
            self.types = types
            self.cells = cells
            self.count = count
            if columns.count > Self.scannedColumns {
                var indexByName: [String: Int] = [:]
                for (index, name) in columns.enumerated() where indexByName[name] == nil { indexByName[name] = index }
                self.indexByName = indexByName
            } else {
                indexByName = nil
            }
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

    static let empty = PostgresRows(storage: Storage(columns: [], types: [], cells: [], count: 0), affectedRows: 0)

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
        return try decode(index, as: type)
    }

    /// Decodes the column at `index` (0-based).
    @inlinable
    package func decode<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard storage.columns.indices.contains(index) else { throw missingColumn(index) }
        guard let text = storage.cells[row * storage.columns.count + index] else {
            guard let null = T.postgresNull else { throw unexpectedNull(index, T.self) }
            return null
        }
        guard let value = T(postgresText: text, type: storage.types[index]) else { throw undecodable(index, text, T.self) }
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

    /// True when the column at `index` is SQL NULL.
    package func isNull(_ index: Int) -> Bool {
        storage.columns.indices.contains(index) && storage.cells[row * storage.columns.count + index] == nil
    }
}
