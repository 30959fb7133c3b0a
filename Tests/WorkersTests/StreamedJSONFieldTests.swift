import Foundation
import Testing

@testable import Workers

struct StreamedJSONFieldTests {
    /// The member's text from `pieces`, concatenated.
    private func extract(_ pieces: [String], _ name: String = "response") -> String {
        var field = StreamedJSONField(name: name)
        return pieces.map { field.feed($0) }.joined()
    }

    /// What JSONDecoder makes of the member: the text the pieces must add up to.
    private func decoded(_ json: String, _ name: String = "response") throws -> String {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        return try #require(object[name] as? String)
    }

    static let answer = #"""
        { "messageType" : "carb_lookup",
          "followUpQuestions": ["And the \"response\"?", "{\"response\": \"no\"}"],
          "response":"Rice has about 28 g\n\t\"cooked\" per 100 g \u00e9\u20AC \ud83c\udf5a, caf\u00E9 \\ \/ \b\f\r ok 🍚 ü",
          "extra": {"response": "nested, not ours"} }
        """#

    @Test func splitAtEveryPositionTheTextIsTheDecodedValue() throws {
        let expected = try decoded(Self.answer)
        #expect(extract([Self.answer]) == expected)
        let characters = Array(Self.answer)
        for cut in 0...characters.count {
            #expect(extract([String(characters[..<cut]), String(characters[cut...])]) == expected, "cut at \(cut)")
        }
    }

    /// One character at a time: every escape, `\u` sequence and surrogate pair split across pieces.
    @Test func characterByCharacterTheTextIsTheDecodedValue() throws {
        #expect(extract(Self.answer.map { String($0) }) == (try decoded(Self.answer)))
    }

    /// The text grows as the value does, not only when its string ends.
    @Test func theTextComesAsTheValueIsWritten() {
        var field = StreamedJSONField(name: "response")
        #expect(field.feed(#"{"response": "Rice "#) == "Rice ")
        #expect(field.feed(#"has \u00"#) == "has ")
        #expect(field.feed(#"e9 \ud83c"#) == "é ")
        #expect(field.feed(#"\udf5a", "messageType": "general"}"#) == "🍚")
    }

    @Test func aNestedOrQuotedResponseIsNotTheMember() {
        #expect(extract([#"{"a": {"response": "no"}, "b": ["response", "no"], "c": "response", "response": "yes"}"#]) == "yes")
        #expect(extract([#"{"messageType": "general", "followUpQuestions": []}"#]).isEmpty)
        // Only the first occurrence.
        #expect(extract([#"{"response": "one", "response": "two"}"#]) == "one")
    }

    @Test func aLoneSurrogateBecomesAReplacementCharacter() {
        #expect(extract([#"{"response": "a\ud83cb\udf5a"}"#]) == "a\u{FFFD}b\u{FFFD}")
    }
}
