/// Strict JSON text (RFC 8259) to ``JSONValue``, in one pass over the UTF-8 bytes.
///
/// Request bodies and job payloads are parsed here instead of by Foundation's `JSONDecoder`, which was 15% of a
/// worker's samples (a payload of a few fields) and 16% of the API's on `POST /logins` (a 130-byte body).
/// Refuses what `JSONSerialization` refuses: trailing commas, comments, single quotes, leading zeros, bare control
/// characters in strings, invalid UTF-8, lone surrogate escapes, anything after the value, nesting deeper than 512.
/// A number whose value is a whole number that fits `Int` is an integer (`7`, and also `7.0` and `7e0`, as Foundation's
/// decoder and JSON Schema's `integer` see them); other numbers are `Double`s. A repeated member name keeps its first
/// value, as `JSONDecoder` reads it. Trailing commas, which Foundation lets through, are refused.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the problem in the input.
    public var offset: Int
    public var reason: String
    public var description: String { "\(reason) at byte \(offset)" }
}

public enum JSONParser {
    public static let maxDepth = 512

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var text = text
        // `withUTF8` rethrows untyped errors: the result carries the typed one out.
        return try text.withUTF8 { bytes in Result { () throws(JSONParseError) in try parse(UnsafeRawBufferPointer(bytes)) } }.get()
    }

    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBytes { bytes in Result { () throws(JSONParseError) in try parse(bytes) } }.get()
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONValue {
        var reader = Reader(bytes: bytes)
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        if reader.index < bytes.count { throw reader.error("unexpected text after the JSON value") }
        return value
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        func error(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

        var atEnd: Bool { index >= bytes.count }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
            guard !atEnd else { throw error("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw error("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONParseError) {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { throw error("invalid literal") }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw error("invalid literal") }
            index += count
        }

        /// Steps into a container at its opening bracket; true when it closes at once (`{}`, `[]`).
        mutating func isEmptyContainer(depth: Int, closing: UInt8) throws(JSONParseError) -> Bool {
            guard depth <= JSONParser.maxDepth else { throw error("nested too deeply") }
            index += 1
            skipWhitespace()
            guard !atEnd, bytes[index] == closing else { return false }
            index += 1
            return true
        }

        /// After a container's element: true at a comma (another element follows), false at the closing bracket.
        mutating func hasNextElement(closing: UInt8, in container: String) throws(JSONParseError) -> Bool {
            skipWhitespace()
            guard !atEnd else { throw error("unexpected end of input in \(container)") }
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: ",") { return true }
            if byte == closing { return false }
            index -= 1
            throw error("expected ',' or '\(Character(Unicode.Scalar(closing)))' in \(container)")
        }

        mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
            var members: [String: JSONValue] = [:]
            if try isEmptyContainer(depth: depth, closing: UInt8(ascii: "}")) { return .object(members) }
            repeat {
                skipWhitespace()
                guard !atEnd, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let name = try string()
                skipWhitespace()
                guard !atEnd, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after a member name") }
                index += 1
                skipWhitespace()
                let member = try value(depth: depth)
                if members[name] == nil { members[name] = member }
            } while try hasNextElement(closing: UInt8(ascii: "}"), in: "an object")
            return .object(members)
        }

        mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
            var items: [JSONValue] = []
            if try isEmptyContainer(depth: depth, closing: UInt8(ascii: "]")) { return .array(items) }
            repeat {
                skipWhitespace()
                items.append(try value(depth: depth))
            } while try hasNextElement(closing: UInt8(ascii: "]"), in: "an array")
            return .array(items)
        }

        /// A string token, from its opening quote: the bytes between the quotes as they are when nothing is escaped
        /// (the common case), else decoded escape by escape.
        mutating func string() throws(JSONParseError) -> String {
            index += 1
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let text = try utf8(start, index)
                    index += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
                if byte < 0x20 { throw error("control character in a string") }
                index += 1
            }
            throw error("unterminated string")
        }

        func utf8(_ from: Int, _ to: Int) throws(JSONParseError) -> String {
            guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[from..<to]), as: UTF8.self) else {
                throw JSONParseError(offset: from, reason: "invalid UTF-8 in a string")
            }
            return text
        }

        mutating func escapedString(from start: Int) throws(JSONParseError) -> String {
            var out = try utf8(start, index)
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return out
                }
                if byte < 0x20 { throw error("control character in a string") }
                if byte != UInt8(ascii: "\\") {
                    let runStart = index
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20
                    {
                        index += 1
                    }
                    out += try utf8(runStart, index)
                    continue
                }
                index += 1
                guard !atEnd else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): out += "\""
                case UInt8(ascii: "\\"): out += "\\"
                case UInt8(ascii: "/"): out += "/"
                case UInt8(ascii: "b"): out += "\u{08}"
                case UInt8(ascii: "f"): out += "\u{0C}"
                case UInt8(ascii: "n"): out += "\n"
                case UInt8(ascii: "r"): out += "\r"
                case UInt8(ascii: "t"): out += "\t"
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("lone surrogate in a \\u escape")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate in a \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("lone surrogate in a \\u escape")
                    }
                    out.unicodeScalars.append(Unicode.Scalar(scalar)!)
                default:
                    index -= 1
                    throw error("invalid escape")
                }
            }
            throw error("unterminated string")
        }

        mutating func hex4() throws(JSONParseError) -> UInt32 {
            guard bytes.count - index >= 4 else { throw error("short \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw error("invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`: digits alone are accumulated as an `Int`; anything
        /// else is parsed by `Double(_:)` (the C library's `strtod`), then kept as an `Int` when it is a whole one.
        mutating func number() throws(JSONParseError) -> JSONValue {
            let start = index
            var negative = false
            if bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            guard !atEnd, isDigit(bytes[index]) else { throw error("invalid number") }
            var integral = true
            var magnitude: UInt64 = 0
            var overflow = false
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if !atEnd, isDigit(bytes[index]) { throw error("leading zero in a number") }
            } else {
                while !atEnd, isDigit(bytes[index]) {
                    let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
                    let (plus, o2) = times.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                    overflow = overflow || o1 || o2
                    magnitude = plus
                    index += 1
                }
            }
            if !atEnd, bytes[index] == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard !atEnd, isDigit(bytes[index]) else { throw error("invalid number") }
                while !atEnd, isDigit(bytes[index]) { index += 1 }
            }
            if !atEnd, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                integral = false
                index += 1
                if !atEnd, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard !atEnd, isDigit(bytes[index]) else { throw error("invalid number") }
                while !atEnd, isDigit(bytes[index]) { index += 1 }
            }
            if integral, !overflow {
                if negative, magnitude <= UInt64(Int.max) + 1 { return .int(magnitude == UInt64(Int.max) + 1 ? Int.min : -Int(magnitude)) }
                if !negative, magnitude <= UInt64(Int.max) { return .int(Int(magnitude)) }
            }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let double = Double(text), double.isFinite else {
                throw JSONParseError(offset: start, reason: "number out of range")
            }
            if let whole = Int(exactly: double) { return .int(whole) }
            return .double(double)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    }
}
