import Foundation
import JSON
import Testing

/// `JSONValueEncoder` turns typed job parameters into payloads and typed results into the text kept with a job: the
/// tree must be the one a hand-built `JSONValue` of the same members was, down to the bytes of its `jsonString`.
@Suite struct JSONValueEncoderTests {
    struct Scalars: Encodable {
        var int = 7
        var int64: Int64 = -9_000_000_000
        var double = 45.0
        var fraction = 0.25
        var flag = true
        var text = "a \"quoted\" line\n"
        var absent: String? = nil
        var present: String? = "here"
    }

    @Test func scalarsKeepTheirJSONTypesAndANilOptionalIsLeftOut() throws {
        let value = try JSONValueEncoder().encode(Scalars())
        let expected: JSONValue = [
            "int": 7, "int64": .int(-9_000_000_000), "double": .double(45), "fraction": 0.25, "flag": true,
            "text": "a \"quoted\" line\n", "present": "here",
        ]
        #expect(value == expected)
        // A whole Double stays a double: `45.0`, as a handler's `.double(45)` was written.
        #expect(value.jsonString.contains(#""double":45.0"#))
    }

    struct ExplicitNull: Encodable {
        var email: String?
        enum CodingKeys: CodingKey { case email }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(email, forKey: .email)
        }
    }

    @Test func aTypeThatEncodesNilGetsNull() throws {
        #expect(try JSONValueEncoder().encode(ExplicitNull(email: nil)) == ["email": nil])
        #expect(try JSONValueEncoder().encode(ExplicitNull(email: "a@b.c")) == ["email": "a@b.c"])
    }

    enum Scope: String, Encodable { case daily }

    struct Nested: Encodable {
        struct Inner: Encodable { var scope: Scope }
        var inner = Inner(scope: .daily)
        var list = [1, 2]
        var map = ["k": "v"]
        var any: JSONValue = ["x": [1.5, nil]]
    }

    @Test func nestedValuesArraysDictionariesAndJSONValues() throws {
        let expected: JSONValue = ["inner": ["scope": "daily"], "list": [1, 2], "map": ["k": "v"], "any": ["x": [1.5, nil]]]
        #expect(try JSONValueEncoder().encode(Nested()) == expected)
        #expect(try JSONValueEncoder().encode(JSONValue.string("as is")) == "as is")
    }

    /// A nested container keeps writing into its parent after the parent moved on to other members.
    struct LateNested: Encodable {
        enum Keys: CodingKey { case outer, after }
        enum InnerKeys: CodingKey { case a, b }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var inner = container.nestedContainer(keyedBy: InnerKeys.self, forKey: .outer)
            var list = inner.nestedUnkeyedContainer(forKey: .b)
            try container.encode(1, forKey: .after)
            try inner.encode("late", forKey: .a)
            try list.encode(true)
        }
    }

    @Test func nestedContainersWrittenLateStillLand() throws {
        #expect(try JSONValueEncoder().encode(LateNested()) == ["outer": ["a": "late", "b": [true]], "after": 1])
    }

    struct Empty: Encodable {}

    @Test func aValueThatEncodesNothingIsAnEmptyObject() throws {
        #expect(try JSONValueEncoder().encode(Empty()) == .object([:]))
    }

    @Test func numbersJSONCannotCarryAreRefused() {
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode(["n": Double.infinity]) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode(["n": Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode([UInt64.max]) }
    }

    struct RoundTrip: Codable, Equatable {
        var id: Int64
        var ratio: Double
        var tags: [String]
        var note: String?
    }

    @Test func whatItEncodesJSONValueDecoderDecodes() throws {
        let value = RoundTrip(id: 42, ratio: 0.5, tags: ["a", "b"], note: nil)
        let text = try JSONValueEncoder().encode(value).jsonString
        #expect(text == #"{"id":42,"ratio":0.5,"tags":["a","b"]}"#)
        #expect(try JSONValueDecoder().decode(RoundTrip.self, fromJSON: text) == value)
    }
}
