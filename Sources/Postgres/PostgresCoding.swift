import Foundation

/// A value that can be bound as a statement parameter, sent in PostgreSQL's text format.
///
/// Numbers, `Bool`, `Date`, `UUID` and bytes are sent with their type (`Int` as `bigint`), so a function taking
/// `integer` needs a cast (`pg_terminate_backend($1::int)`); columns and comparisons convert on their own.
package protocol PostgresEncodable: Sendable {
    /// The value as PostgreSQL's text input would read it (what `psql` prints).
    var postgresText: String { get }
    /// The parameter's type OID. 0 (the default) lets the server infer the type from the statement, as for a
    /// quoted literal: a `String` can then fill a `uuid`, `jsonb` or enum column.
    var postgresType: UInt32 { get }
}

extension PostgresEncodable {
    package var postgresType: UInt32 { 0 }
}

/// A value that can be read from a result column in PostgreSQL's text format.
package protocol PostgresDecodable {
    /// Reads a non-NULL value; nil when `text` is not a valid value of this type.
    /// - Parameters:
    ///   - text: the value in text format.
    ///   - type: the column's type OID (`bytea` is hex-encoded; other columns read as `[UInt8]` give their UTF-8).
    init?(postgresText text: String, type: UInt32)
    /// The same, read from the bytes of the value in libpq's result, where they are: the default makes them a
    /// `String` first; types that read them in place (`Date`) skip it.
    init?(postgresBytes bytes: UnsafeBufferPointer<UInt8>, type: UInt32)
    /// The value SQL NULL decodes to; nil (the default) makes NULL a decoding error.
    static var postgresNull: Self? { get }
}

extension PostgresDecodable {
    package static var postgresNull: Self? { nil }

    package init?(postgresBytes bytes: UnsafeBufferPointer<UInt8>, type: UInt32) {
        self.init(postgresText: String(decoding: bytes, as: UTF8.self), type: type)
    }
}

/// Type OIDs from `pg_type` (stable across PostgreSQL versions).
enum PostgresType {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let int8: UInt32 = 20
    static let int4: UInt32 = 23
    static let float8: UInt32 = 701
    static let date: UInt32 = 1082
    static let timestamptz: UInt32 = 1184
    static let uuid: UInt32 = 2950
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    package init?(postgresText text: String, type: UInt32) {
        guard let value = Wrapped(postgresText: text, type: type) else { return nil }
        self = .some(value)
    }
    package init?(postgresBytes bytes: UnsafeBufferPointer<UInt8>, type: UInt32) {
        guard let value = Wrapped(postgresBytes: bytes, type: type) else { return nil }
        self = .some(value)
    }
    package static var postgresNull: Self? { .some(.none) }
}

extension String: PostgresEncodable, PostgresDecodable {
    package var postgresText: String { self }
    package init?(postgresText text: String, type: UInt32) { self = text }
}

extension Int: PostgresEncodable, PostgresDecodable {
    package var postgresText: String { String(self) }
    package var postgresType: UInt32 { PostgresType.int8 }
    package init?(postgresText text: String, type: UInt32) { self.init(text) }
}

extension Int64: PostgresEncodable, PostgresDecodable {
    package var postgresText: String { String(self) }
    package var postgresType: UInt32 { PostgresType.int8 }
    package init?(postgresText text: String, type: UInt32) { self.init(text) }
}

extension Int32: PostgresEncodable, PostgresDecodable {
    package var postgresText: String { String(self) }
    package var postgresType: UInt32 { PostgresType.int4 }
    package init?(postgresText text: String, type: UInt32) { self.init(text) }
}

extension Double: PostgresEncodable, PostgresDecodable {
    package var postgresText: String {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        // Swift prints the shortest text that reads back as the same Double, as PostgreSQL (extra_float_digits 1) does.
        return String(self)
    }
    package var postgresType: UInt32 { PostgresType.float8 }
    package init?(postgresText text: String, type: UInt32) {
        switch text {
        case "NaN": self = .nan
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        default: self.init(text)  // float4/float8/numeric text; also integers
        }
    }
}

extension Bool: PostgresEncodable, PostgresDecodable {
    package var postgresText: String { self ? "t" : "f" }
    package var postgresType: UInt32 { PostgresType.bool }
    package init?(postgresText text: String, type: UInt32) {
        switch text {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
}

extension UUID: PostgresEncodable, PostgresDecodable {
    package var postgresText: String { uuidString.lowercased() }
    package var postgresType: UInt32 { PostgresType.uuid }
    package init?(postgresText text: String, type: UInt32) { self.init(uuidString: text) }
}

/// `timestamptz` with microsecond precision. Connections run with `TimeZone=UTC` and `DateStyle=ISO`, but any
/// offset the server prints is honoured. `date` and `timestamp` columns read as UTC; ±infinity as `distantFuture`/`distantPast`.
extension Date: PostgresEncodable, PostgresDecodable {
    package var postgresText: String { PostgresTimestamp.format(self) }
    package var postgresType: UInt32 { PostgresType.timestamptz }
    package init?(postgresText text: String, type: UInt32) {
        guard let date = PostgresTimestamp.parse(text) else { return nil }
        self = date
    }
    package init?(postgresBytes bytes: UnsafeBufferPointer<UInt8>, type: UInt32) {
        guard let date = PostgresTimestamp.parse(utf8: bytes) else { return nil }
        self = date
    }
}

/// `bytea`, sent and read in hex format (`\x0a1b…`).
extension [UInt8]: PostgresEncodable, PostgresDecodable {
    package var postgresText: String { Bytea.hex(self) }
    package var postgresType: UInt32 { PostgresType.bytea }
    package init?(postgresText text: String, type: UInt32) {
        if type != PostgresType.bytea {
            self = Array(text.utf8)
            return
        }
        guard let bytes = Bytea.bytes(fromHex: text) else { return nil }
        self = bytes
    }
}

/// `bytea`, like `[UInt8]`.
extension Data: PostgresEncodable, PostgresDecodable {
    package var postgresText: String { Bytea.hex(self) }
    package var postgresType: UInt32 { PostgresType.bytea }
    package init?(postgresText text: String, type: UInt32) {
        guard let bytes = [UInt8](postgresText: text, type: type) else { return nil }
        self = Data(bytes)
    }
}

enum Bytea {
    private static let digits = Array("0123456789abcdef".utf8)

    static func hex(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: 2 + bytes.count * 2) { buffer in
            buffer[0] = UInt8(ascii: "\\")
            buffer[1] = UInt8(ascii: "x")
            var index = 2
            for byte in bytes {
                buffer[index] = digits[Int(byte >> 4)]
                buffer[index + 1] = digits[Int(byte & 0x0f)]
                index += 2
            }
            return index
        }
    }

    /// Reads the hex format the connections select (`bytea_output = hex`).
    static func bytes(fromHex text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
