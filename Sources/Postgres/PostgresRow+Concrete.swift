import Foundation

/// Concrete `decode` overloads for the column types most rows hold, by name and by index; the type checker prefers them to the generic
/// `decode`, and they are specialized here, in this module.
///
/// The generic `decode` reaches other modules unspecialized although it is inlinable (Swift 6.3, release build:
/// `Meal.init(row:)` called its generic entry point for each of its 11 columns). There each cell cost a generic
/// metadata lookup (`T?`, `T??`) and the witness calls: decoding a page of 20 meals was 13% of `GET /meals`'s CPU,
/// a third of it the lookups (perf, 2026-11-28). A type without an overload here still decodes, generically.
extension PostgresRow {
    package func decode(_ column: String, as type: String.Type = String.self) throws(PostgresError) -> String {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: String?.Type = String?.self) throws(PostgresError) -> String? {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Int.Type = Int.self) throws(PostgresError) -> Int {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Int?.Type = Int?.self) throws(PostgresError) -> Int? {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Int64.Type = Int64.self) throws(PostgresError) -> Int64 {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Int64?.Type = Int64?.self) throws(PostgresError) -> Int64? {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Double.Type = Double.self) throws(PostgresError) -> Double {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Double?.Type = Double?.self) throws(PostgresError) -> Double? {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Bool.Type = Bool.self) throws(PostgresError) -> Bool {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Bool?.Type = Bool?.self) throws(PostgresError) -> Bool? {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Date.Type = Date.self) throws(PostgresError) -> Date {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: Date?.Type = Date?.self) throws(PostgresError) -> Date? {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: UUID.Type = UUID.self) throws(PostgresError) -> UUID {
        try value(column, as: type)
    }

    package func decode(_ column: String, as type: UUID?.Type = UUID?.self) throws(PostgresError) -> UUID? {
        try value(column, as: type)
    }

    // The same by the column's index.

    package func decode(_ index: Int, as type: String.Type = String.self) throws(PostgresError) -> String {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: String?.Type = String?.self) throws(PostgresError) -> String? {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Int.Type = Int.self) throws(PostgresError) -> Int {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Int?.Type = Int?.self) throws(PostgresError) -> Int? {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Int64.Type = Int64.self) throws(PostgresError) -> Int64 {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Int64?.Type = Int64?.self) throws(PostgresError) -> Int64? {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Double.Type = Double.self) throws(PostgresError) -> Double {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Double?.Type = Double?.self) throws(PostgresError) -> Double? {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Bool.Type = Bool.self) throws(PostgresError) -> Bool {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Bool?.Type = Bool?.self) throws(PostgresError) -> Bool? {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Date.Type = Date.self) throws(PostgresError) -> Date {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: Date?.Type = Date?.self) throws(PostgresError) -> Date? {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: UUID.Type = UUID.self) throws(PostgresError) -> UUID {
        try value(at: index, as: type)
    }

    package func decode(_ index: Int, as type: UUID?.Type = UUID?.self) throws(PostgresError) -> UUID? {
        try value(at: index, as: type)
    }
}
