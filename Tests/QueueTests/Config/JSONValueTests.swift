import Foundation
import JSON
import Testing

@testable import Queue

@Suite struct JSONValueTests {
    @Test func parsingKeepsTypesApart() throws {
        let value = try JSONValue(parsing: #"{"t":true,"f":false,"i":1,"z":0,"d":1.5,"s":"x","n":null,"a":[1,"2",[]]}"#)
        #expect(value["t"] == .bool(true))
        #expect(value["f"] == .bool(false))
        #expect(value["i"] == .int(1))
        #expect(value["z"] == .int(0))
        #expect(value["d"] == .double(1.5))
        #expect(value["s"] == .string("x"))
        #expect(value["n"] == .null)
        #expect(value["a"] == .array([.int(1), .string("2"), .array([])]))
        #expect(value["missing"] == nil)
        #expect(JSONValue.string("x")["key"] == nil)
    }

    @Test func topLevelScalarsAndBigNumbers() throws {
        #expect(try JSONValue(parsing: "true") == .bool(true))
        #expect(try JSONValue(parsing: "1") == .int(1))
        #expect(try JSONValue(parsing: "-7") == .int(-7))
        #expect(try JSONValue(parsing: "1e3") == .double(1000) || JSONValue(parsing: "1e3") == .int(1000))
        // Beyond Int64 an integer can only be a double.
        #expect(try JSONValue(parsing: "123456789012345678901234567890") == .double(1.2345678901234568e29))
    }

    @Test func invalidJSONThrows() {
        #expect(throws: (any Error).self) { try JSONValue(parsing: "{") }
        #expect(throws: (any Error).self) { try JSONValue(parsing: "{'a': 1}") }
        #expect(throws: (any Error).self) { try JSONValue(parsing: "") }
    }

    @Test func jsonStringIsCompactSortedAndEscaped() throws {
        let value: JSONValue = ["b": [1, 2.5, nil, true], "a": "q\"b\\n\nt\tc\u{01}é", "c": [:]]
        #expect(value.jsonString == #"{"a":"q\"b\\n\nt\tc\u0001é","b":[1,2.5,null,true],"c":{}}"#)
        #expect(try JSONValue(parsing: value.jsonString) == value)
        #expect(JSONValue.double(.nan).jsonString == "null")
    }

    /// Strings that need no escape are written whole; one with any byte to escape goes character by character. A log
    /// line's values (`appendQuoted`, into bytes) are written alike.
    @Test(arguments: [
        ("plain text, Grüße 日本 🍎", #""plain text, Grüße 日本 🍎""#), ("", #""""#), ("a\u{2028}b\u{2029}", #""a\u2028b\u2029""#),
        ("wait… 5€", #""wait… 5€""#), ("tail\"", #""tail\"""#), ("\\", #""\\""#), ("x\u{1F}", #""x\u001f""#),
    ])
    func stringsAreEscapedOnlyWhereNeeded(text: String, json: String) throws {
        #expect(JSONValue.string(text).jsonString == json)
        #expect(try JSONValue(parsing: json) == .string(text))
        var bytes: [UInt8] = Array("[".utf8)
        JSONValue.appendQuoted(text, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "[" + json)
    }

    @Test func codableRoundTrip() throws {
        let value: JSONValue = ["id": 7, "ok": false, "tags": ["x"], "ratio": 0.25]
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
    }

    @Test func jsonEqualityTreatsOneAndOnePointZeroAlike() {
        #expect(JSONValue.int(1).jsonEquals(.double(1.0)))
        #expect(!JSONValue.int(1).jsonEquals(.bool(true)))
        let one: JSONValue = ["a": [1]]
        let onePointZero: JSONValue = ["a": [1.0]]
        let other: JSONValue = ["b": [1]]
        #expect(one.jsonEquals(onePointZero))
        #expect(!one.jsonEquals(other))
    }
}
