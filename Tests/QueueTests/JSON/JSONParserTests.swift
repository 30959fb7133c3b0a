import Foundation
import JSON
import Queue
import Testing

/// `JSONParser` and `JSONValueDecoder` replace Foundation's `JSONDecoder` on the hot paths: they must accept and
/// refuse the same texts, build the same values, and report errors with the same cases and coding paths.
@Suite struct JSONParserTests {
    /// What Foundation's decoder makes of a text, for comparison.
    static func foundation(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    static let valid = [
        "{}", "[]", "0", "-0", "7", "-7", "1.5", "-0.25", "1e3", "1E-2", "2.5e+2", "true", "false", "null", "\"\"",
        "9223372036854775807", "-9223372036854775808", "9223372036854775808", "123456789012345678901234567890",
        #""a\"b\\c\/d\b\f\n\r\t""#, #""\u00e9\u4e2d\ud83c\udf4e""#, "\"Grüße, 日本 🍎\"",
        #" { "a" : [ 1 , 2.0 , { "b" : null } ] , "c" : "x" } "#, "[[[[[]]]]]", #"{"a":1,"a":2}"#,
        #"{"meals":[{"localId":"m1","carbEstimate":12.5,"createdAt":"2026-11-20T12:00:00Z"}]}"#,
    ]

    @Test(arguments: valid)
    func buildsWhatFoundationBuilds(text: String) throws {
        #expect(try JSONParser.parse(text) == Self.foundation(text))
    }

    static let invalid = [
        "", " ", "{", "}", "[1 2]", "{\"a\" 1}", "{a:1}", "{'a':1}", "01", "-", "1.", ".5", "1e", "+1",
        "tru", "nul", "True", "\"abc", "\"a\u{01}b\"", #""\x""#, #""\u12""#, #""\ud83c""#, #""\udf4e""#, "[1] x", "1 2",
        "// c\n1", "[", "NaN", "Infinity", "1e400", String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
    ]

    @Test(arguments: invalid)
    func refusesWhatFoundationRefuses(text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
        #expect(throws: (any Error).self) { try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) }
    }

    /// Stricter than Foundation, which lets trailing commas through: they are not JSON (RFC 8259).
    @Test(arguments: ["[1,]", "{\"a\":1,}", "[1,2,]"])
    func refusesTrailingCommas(text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0x61, 0x5C, 0x6E, 0xFF, 0x22]) }
    }

    @Test func keepsIntegersAndTheirLimits() throws {
        #expect(
            try JSONParser.parse("[9223372036854775807,-9223372036854775808,9223372036854775808,1.0,1e2,1.5]")
                == .array([.int(.max), .int(.min), .double(9_223_372_036_854_775_808), .int(1), .int(100), .double(1.5)]))
    }

    /// Random documents written by `JSONSerialization` (escapes, unicode, nesting, numbers of every shape) read back
    /// as Foundation reads them.
    @Test func randomDocumentsMatchFoundation() throws {
        var generator = SeededGenerator(seed: 20_261_123)
        for _ in 0..<300 {
            let object = Self.randomValue(depth: 0, &generator)
            let data = try JSONSerialization.data(withJSONObject: object, options: [.fragmentsAllowed])
            let text = String(decoding: data, as: UTF8.self)
            #expect(try JSONParser.parse(text) == Self.foundation(text), "\(text)")
        }
    }

    static func randomValue(depth: Int, _ g: inout SeededGenerator) -> Any {
        switch Int.random(in: depth > 3 ? 0...4 : 0...6, using: &g) {
        case 0: return NSNull()
        case 1: return Bool.random(using: &g)
        case 2: return Int.random(in: -1_000_000_000_000...1_000_000_000_000, using: &g)
        case 3: return Double.random(in: -1e9...1e9, using: &g)
        case 4:
            let alphabet = Array("aé中🍎\"\\/\n\t\u{01}\u{7F} xyz")
            return String((0..<Int.random(in: 0...12, using: &g)).map { _ in alphabet.randomElement(using: &g)! })
        case 5: return (0..<Int.random(in: 0...4, using: &g)).map { _ in randomValue(depth: depth + 1, &g) }
        default:
            var members: [String: Any] = [:]
            for index in 0..<Int.random(in: 0...4, using: &g) { members["k\(index)\u{e9}"] = randomValue(depth: depth + 1, &g) }
            return members
        }
    }
}

@Suite struct JSONValueDecoderTests {
    struct Meal: Decodable, Equatable {
        var localId: String
        var carbs: Int
        var ratio: Double?
        var note: String?
        var tags: [String]
        var when: Date
        var kind: Kind
        enum Kind: String, Decodable { case breakfast, lunch }
    }

    struct Body: Decodable, Equatable {
        var meals: [Meal]
        var small: UInt8?
    }

    static let decoder = JSONValueDecoder(dateParser: { text in ISO8601DateFormatter().date(from: text) })

    static func meal(_ fields: String) -> String {
        #"{"meals":[{"localId":"m0","carbs":1,"tags":[],"when":"2026-11-20T12:00:00Z","kind":"lunch"},"# + fields + "]}"
    }

    @Test func decodesNestedValuesOptionalsAndDates() throws {
        let body = try Self.decoder.decode(
            Body.self,
            fromJSON: Self.meal(
                #"{"localId":"m1","carbs":12.0,"ratio":3,"note":null,"tags":["a","b"],"when":"2026-11-21T08:30:00Z","kind":"breakfast"}"#))
        #expect(body.meals.count == 2)
        #expect(
            body.meals[1]
                == Meal(
                    localId: "m1", carbs: 12, ratio: 3, note: nil, tags: ["a", "b"], when: Date(timeIntervalSince1970: 1_795_249_800),
                    kind: .breakfast))
        #expect(body.small == nil)
    }

    /// The error and the path of each failure, compared with what Foundation's `JSONDecoder` reports for the same text.
    /// `foundationPath: false`: Foundation reports a number that does not fit its type at the root, not at the
    /// member; this decoder names the member (the API's 400 then names the field, instead of "not valid JSON").
    static let failures: [(fields: String, path: String, foundationPath: Bool)] = [
        (#"{"carbs":1,"tags":[],"when":"2026-11-20T12:00:00Z","kind":"lunch"}"#, "meals.Index 1.localId", true),
        (#"{"localId":null,"carbs":1,"tags":[],"when":"2026-11-20T12:00:00Z","kind":"lunch"}"#, "meals.Index 1.localId", true),
        (#"{"localId":"m","carbs":"1","tags":[],"when":"2026-11-20T12:00:00Z","kind":"lunch"}"#, "meals.Index 1.carbs", true),
        (#"{"localId":"m","carbs":1.5,"tags":[],"when":"2026-11-20T12:00:00Z","kind":"lunch"}"#, "meals.Index 1.carbs", false),
        (#"{"localId":"m","carbs":1e30,"tags":[],"when":"2026-11-20T12:00:00Z","kind":"lunch"}"#, "meals.Index 1.carbs", false),
        (#"{"localId":"m","carbs":1,"tags":[1],"when":"2026-11-20T12:00:00Z","kind":"lunch"}"#, "meals.Index 1.tags.Index 0", true),
        (#"{"localId":"m","carbs":1,"tags":{},"when":"2026-11-20T12:00:00Z","kind":"lunch"}"#, "meals.Index 1.tags", true),
        (#"{"localId":"m","carbs":1,"tags":[],"when":"2026-11-20T12:00:00Z","kind":"dinner"}"#, "meals.Index 1.kind", true),
        (#""m""#, "meals.Index 1", true),
    ]

    @Test(arguments: 0..<failures.count)
    func reportsTheSameErrorsAsFoundation(index: Int) throws {
        let text = Self.meal(Self.failures[index].fields)
        let foundation = JSONDecoder()
        foundation.dateDecodingStrategy = .iso8601
        let expected = try #require(Self.failure { try foundation.decode(Body.self, from: Data(text.utf8)) })
        let actual = try #require(Self.failure { try Self.decoder.decode(Body.self, fromJSON: text) })
        #expect(actual.kind == expected.kind)
        if Self.failures[index].foundationPath { #expect(actual.path == expected.path) }
        #expect(actual.path == Self.failures[index].path)
    }

    @Test func refusesOutOfRangeSmallIntegersAndBadDates() throws {
        let small = try #require(Self.failure { try Self.decoder.decode(Body.self, fromJSON: #"{"meals":[],"small":300}"#) })
        #expect(small.kind == "dataCorrupted" && small.path == "small")
        let date = try #require(
            Self.failure {
                try Self.decoder.decode(
                    Body.self,
                    fromJSON: Self.meal(
                        #"{"localId":"m","carbs":1,"tags":[],"when":"yesterday","kind":"lunch"}"#))
            })
        #expect(date.kind == "dataCorrupted" && date.path == "meals.Index 1.when")
        let notJSON = try #require(Self.failure { try Self.decoder.decode(Body.self, fromJSON: "{\"meals\":") })
        #expect(notJSON.kind == "dataCorrupted" && notJSON.path == "")
    }

    /// The case name and coding path of a `DecodingError` (nil when `body` succeeds).
    static func failure(_ body: () throws -> Body) -> (kind: String, path: String)? {
        do {
            _ = try body()
            return nil
        } catch let error as DecodingError {
            switch error {
            case .keyNotFound(let key, let context):
                return ("keyNotFound", (context.codingPath + [key]).map(\.stringValue).joined(separator: "."))
            case .valueNotFound(_, let context): return ("valueNotFound", context.codingPath.map(\.stringValue).joined(separator: "."))
            case .typeMismatch(_, let context): return ("typeMismatch", context.codingPath.map(\.stringValue).joined(separator: "."))
            case .dataCorrupted(let context): return ("dataCorrupted", context.codingPath.map(\.stringValue).joined(separator: "."))
            @unknown default: return ("unknown", "")
            }
        } catch {
            return ("other", "\(error)")
        }
    }
}
