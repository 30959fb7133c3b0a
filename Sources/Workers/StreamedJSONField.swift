/// The text of one string member of a JSON object, decoded as the object is written: a model streaming
/// `{"response": "Rice has about 28 g…", "messageType": …}` token by token. Fed the JSON in any pieces, it returns
/// the part of the member's value each piece completes, escapes decoded (`\n`, `\"`, `\uXXXX`, surrogate pairs),
/// however the pieces split them. Keys may come in any order; only a member of the outermost object counts (a
/// nested `"response"` is someone else's), and only its first occurrence.
///
/// It only follows the structure and never validates it: the whole answer is parsed as before once it is complete,
/// and that parse decides what is stored. On the JSON the model was asked for, the pieces concatenate to the
/// decoded value exactly.
struct StreamedJSONField: Sendable {
    private enum Escape: Sendable {
        case none
        case backslash
        /// `\u` and the hex digits read so far.
        case unicode(UInt32, digits: Int)
    }

    let name: String
    private var depth = 0
    private var inString = false
    private var escape = Escape.none
    /// In the outermost object, between `{` or `,` and the next key.
    private var expectingKey = false
    private var readingKey = false
    private var key = ""
    /// The key whose value comes next (after its colon).
    private var valueOf: String?
    private var capturing = false
    private var captured = false
    /// A `\uD8xx` read, waiting for its low half.
    private var highSurrogate: UInt32?

    init(name: String) { self.name = name }

    /// The decoded text of the member's value that `piece` adds (empty when it adds none).
    mutating func feed(_ piece: some StringProtocol) -> String {
        var out = String.UnicodeScalarView()
        for scalar in piece.unicodeScalars { take(scalar, into: &out) }
        return String(out)
    }

    private mutating func take(_ scalar: Unicode.Scalar, into out: inout String.UnicodeScalarView) {
        guard inString else { return structure(scalar) }
        switch escape {
        case .backslash:
            escape = .none
            let decoded: Unicode.Scalar
            switch scalar {
            case "n": decoded = "\n"
            case "t": decoded = "\t"
            case "r": decoded = "\r"
            case "b": decoded = "\u{08}"
            case "f": decoded = "\u{0C}"
            case "u":
                escape = .unicode(0, digits: 0)
                return
            default: decoded = scalar  // `\"`, `\\`, `\/`
            }
            emit(decoded, into: &out)
        case .unicode(let value, let digits):
            guard let digit = hexDigit(scalar) else {
                escape = .none  // malformed: the whole parse will say so
                return
            }
            let next = value << 4 | digit
            guard digits == 3 else {
                escape = .unicode(next, digits: digits + 1)
                return
            }
            escape = .none
            unit(next, into: &out)
        case .none:
            switch scalar {
            case "\\": escape = .backslash
            case "\"": endString(into: &out)
            default: emit(scalar, into: &out)
            }
        }
    }

    private func hexDigit(_ scalar: Unicode.Scalar) -> UInt32? {
        switch scalar {
        case "0"..."9": scalar.value - 0x30
        case "a"..."f": scalar.value - 0x61 + 10
        case "A"..."F": scalar.value - 0x41 + 10
        default: nil
        }
    }

    /// A UTF-16 code unit from `\uXXXX`: a surrogate pair's halves become one scalar.
    private mutating func unit(_ value: UInt32, into out: inout String.UnicodeScalarView) {
        if (0xD800...0xDBFF).contains(value) {
            if highSurrogate != nil {
                highSurrogate = nil
                emit("\u{FFFD}", into: &out)
            }
            highSurrogate = value
        } else if (0xDC00...0xDFFF).contains(value), let high = highSurrogate {
            highSurrogate = nil
            emit(Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00)) ?? "\u{FFFD}", into: &out)
        } else {
            emit(Unicode.Scalar(value) ?? "\u{FFFD}", into: &out)
        }
    }

    private mutating func emit(_ scalar: Unicode.Scalar, into out: inout String.UnicodeScalarView) {
        if highSurrogate != nil, !(0xDC00...0xDFFF).contains(scalar.value) {
            highSurrogate = nil
            emit("\u{FFFD}", into: &out)  // a high half not followed by a low one
        }
        if readingKey {
            key.unicodeScalars.append(scalar)
        } else if capturing {
            out.append(scalar)
        }
    }

    private mutating func endString(into out: inout String.UnicodeScalarView) {
        if highSurrogate != nil {
            highSurrogate = nil
            emit("\u{FFFD}", into: &out)
        }
        inString = false
        if readingKey {
            readingKey = false
            valueOf = key
        } else if capturing {
            capturing = false
            captured = true
        }
    }

    /// Outside strings: only the outermost object's keys and the start of the wanted value matter.
    private mutating func structure(_ scalar: Unicode.Scalar) {
        switch scalar {
        case "\"":
            inString = true
            if depth == 1 && expectingKey {
                expectingKey = false
                readingKey = true
                key = ""
            } else if depth == 1, valueOf == name, !captured {
                capturing = true
            }
            if !readingKey { valueOf = nil }
        case "{", "[":
            depth += 1
            if depth == 1 && scalar == "{" { expectingKey = true }
            if depth > 1 { valueOf = nil }
        case "}", "]":
            depth -= 1
        case "," where depth == 1:
            expectingKey = true
            valueOf = nil
        default:
            break  // `:`, whitespace, numbers, literals
        }
    }
}
