import Foundation
import JSON
import Store
import Testing

@testable import API

/// The response encoder writes what Foundation's `JSONEncoder` (configured as the API used it) writes, up to key
/// order: compared as parsed JSON, plus the exact text of numbers and escapes.
@Suite struct StreamingJSONEncoderTests {
    struct Inner: Encodable {
        var name: String
        var tags: [String]
        var score: Double?
    }

    struct Sample: Encodable {
        var text = "quote \" backslash \\ slash / newline \n tab \t bell \u{7} é 🍎"
        var integer = -42
        var large: Int64 = 9_007_199_254_740_993
        var unsigned: UInt8 = 255
        var whole = 59.0
        var fraction = 0.85
        var tiny = 1e-7
        var huge = 1e300
        var yes = true
        var missing: String? = nil
        @Nullable var explicitNull: String? = nil
        @Nullable var present: Int? = 3
        var date = Date(timeIntervalSince1970: 1_732_233_600.25)
        var nested = Inner(name: "n", tags: ["a", "b"], score: nil)
        var list = [Inner(name: "x", tags: [], score: 1.5)]
        var empty: [String: Int] = [:]
        var dictionary: [String: JSONValue] = ["k": .array([.null, .bool(false), .int(1), .string("s")]), "o": .object([:])]
        var matrix: [[Int]] = [[1, 2], [], [3]]
    }

    static func foundation<T: Encodable>(_ value: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    static func parsed(_ data: some Sequence<UInt8>) throws -> NSObject {
        try JSONSerialization.jsonObject(with: Data(data), options: [.fragmentsAllowed]) as! NSObject
    }

    @Test func matchesFoundationAsJSON() throws {
        let ours = try StreamingJSONEncoder.api.encode(Sample())
        #expect(try Self.parsed(ours) == Self.parsed(try Self.foundation(Sample())))
    }

    @Test func writesNumbersAndEscapesAsFoundationDoes() throws {
        let text = String(decoding: try StreamingJSONEncoder.api.encode(Sample()), as: UTF8.self)
        for fragment in [
            #""whole":59,"#, #""fraction":0.85,"#, #""tiny":1e-07,"#, #""huge":1e+300,"#, #""integer":-42,"#,
            #""large":9007199254740993,"#, #""explicitNull":null,"#, #""present":3,"#,
            #""date":"2024-11-22T00:00:00.250Z""#, #""text":"quote \" backslash \\ slash / newline \n tab \t bell \u0007 é 🍎""#,
            #""nested":{"name":"n","tags":["a","b"]}"#, #""empty":{}"#, #""matrix":[[1,2],[],[3]]"#,
        ] {
            #expect(text.contains(fragment), "\(fragment) in \(text)")
        }
        #expect(!text.contains("missing"), "an absent optional is left out, as JSONEncoder does")
        #expect(String(decoding: try Self.foundation(Sample.init().whole), as: UTF8.self) == "59")
    }

    @Test func keepsDeclarationOrder() throws {
        let text = String(decoding: try StreamingJSONEncoder.api.encode(Inner(name: "n", tags: [], score: 2)), as: UTF8.self)
        #expect(text == #"{"name":"n","tags":[],"score":2}"#)
    }

    /// Hand-written `encode(to:)` with nested containers and a super-encoder: each is closed when its parent moves on.
    struct Nested: Encodable {
        enum Key: String, CodingKey { case a, b, c, d }
        func encode(to encoder: any Encoder) throws {
            var root = encoder.container(keyedBy: Key.self)
            var a = root.nestedContainer(keyedBy: Key.self, forKey: .a)
            try a.encode(1, forKey: .b)
            var inner = a.nestedUnkeyedContainer(forKey: .c)
            try inner.encode("x")
            var deeper = inner.nestedContainer(keyedBy: Key.self)
            try deeper.encode(true, forKey: .d)
            try root.encode("after", forKey: .b)
            var list = root.nestedUnkeyedContainer(forKey: .c)
            try list.encodeNil()
            let superEncoder = root.superEncoder(forKey: .d)
            var single = superEncoder.singleValueContainer()
            try single.encode(7)
        }
    }

    @Test func closesNestedContainersInOrder() throws {
        let text = String(decoding: try StreamingJSONEncoder.api.encode(Nested()), as: UTF8.self)
        #expect(text == #"{"a":{"b":1,"c":["x",{"d":true}]},"b":"after","c":[null],"d":7}"#)
        #expect(try Self.parsed(Array(text.utf8)) == Self.parsed(try Self.foundation(Nested())))
    }

    @Test func refusesNonFiniteNumbersWithTheirPath() throws {
        struct Bad: Encodable { var values: [Double] }
        #expect {
            try StreamingJSONEncoder.api.encode(Bad(values: [1, .infinity]))
        } throws: { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["values", "Index 1"]
        }
    }
}

/// `MealDTO` writes itself straight into the API's encoder (`streamingObject`) and through the keyed container into
/// any other: both give the same members, in the declared order, nil members as `null`.
@Suite struct MealDTOEncodingTests {
    static let created = Date(timeIntervalSince1970: 1_732_233_600.25)
    static let full = MealDTO(
        Meal(
            id: 7, localId: "m1", name: "Pasta \"al dente\" / 🍝", carbEstimate: 62.5, confidenceLevel: 0.853, photoID: 3,
            createdAt: created, updatedAt: created.addingTimeInterval(60)))
    static let bare = MealDTO(Meal(id: 8, localId: nil, name: "Apple", carbEstimate: 25, createdAt: created, updatedAt: created))

    @Test func writesTheKeyedMembersStraight() throws {
        for meal in [Self.full, Self.bare] {
            let ours = try StreamingJSONEncoder.api.encode([meal])
            let foundation = try StreamingJSONEncoderTests.foundation([meal])
            #expect(try StreamingJSONEncoderTests.parsed(ours) == StreamingJSONEncoderTests.parsed(foundation))
        }
        let text = String(decoding: try StreamingJSONEncoder.api.encode(Self.bare), as: UTF8.self)
        #expect(
            text
                == #"{"id":8,"localId":null,"name":"Apple","carbEstimate":25,"confidenceLevel":null,"imageUrl":null,"#
                + #""createdAt":"2024-11-22T00:00:00.250Z","updatedAt":"2024-11-22T00:00:00.250Z"}"#)
        let full = String(decoding: try StreamingJSONEncoder.api.encode(Self.full), as: UTF8.self)
        #expect(full.hasPrefix(#"{"id":7,"localId":"m1","name":"Pasta \"al dente\" / 🍝","carbEstimate":62.5,"confidenceLevel":"0.85","#))
        #expect(full.contains(#""imageUrl":"/api/mobile/v1/meals/7/image","#))
    }

    @Test func refusesANonFiniteEstimateNamingIt() throws {
        var meal = Self.bare
        meal.carbEstimate = Double.infinity
        let page: [String: [MealDTO]] = ["meals": [meal]]
        #expect {
            try StreamingJSONEncoder.api.encode(page)
        } throws: { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["meals", "Index 0", "carbEstimate"]
        }
    }
}

/// A page of meals is written straight into the API's encoder, frame and elements, with the members and order the
/// keyed containers give: `historyStart` left out when the tier's history is unlimited.
@Suite struct MealsPageEncodingTests {
    static func page(historyStart: Date?) -> MealsRoutes.Page {
        MealsRoutes.Page(
            meals: [MealDTOEncodingTests.full, MealDTOEncodingTests.bare],
            pagination: .init(limit: 20, offset: 40, total: 42, hasMore: false), historyStart: historyStart)
    }

    @Test(arguments: [nil, MealDTOEncodingTests.created])
    func writesWhatTheKeyedContainersWrite(historyStart: Date?) throws {
        let page = Self.page(historyStart: historyStart)
        let ours = try StreamingJSONEncoder.api.encode(page)
        let foundation = try StreamingJSONEncoderTests.foundation(page)
        #expect(try StreamingJSONEncoderTests.parsed(ours) == StreamingJSONEncoderTests.parsed(foundation))
        let text = String(decoding: ours, as: UTF8.self)
        #expect(text.hasPrefix(#"{"meals":[{"id":7,"#))
        let tail = #"],"pagination":{"limit":20,"offset":40,"total":42,"hasMore":false}"#
        #expect(text.hasSuffix(historyStart == nil ? tail + "}" : tail + #","historyStart":"2024-11-22T00:00:00.250Z"}"#), "\(text)")
    }

    @Test func anEmptyPageHasAnEmptyList() throws {
        let page = MealsRoutes.Page(meals: [], pagination: .init(limit: 20, offset: 0, total: 0, hasMore: false), historyStart: nil)
        #expect(
            String(decoding: try StreamingJSONEncoder.api.encode(page), as: UTF8.self)
                == #"{"meals":[],"pagination":{"limit":20,"offset":0,"total":0,"hasMore":false}}"#)
    }

    /// A bad element inside the page is named by its path, as through `Array`'s own container.
    @Test func refusesANonFiniteEstimateNamingIt() throws {
        var meal = MealDTOEncodingTests.bare
        meal.carbEstimate = .nan
        let page = MealsRoutes.Page(meals: [meal], pagination: .init(limit: 20, offset: 0, total: 1, hasMore: false), historyStart: nil)
        #expect {
            try StreamingJSONEncoder.api.encode(page)
        } throws: { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["meals", "Index 0", "carbEstimate"]
        }
    }
}

/// `POST /logins`'s answer, written straight and through the keyed container: the same members, `jobId` `null` when
/// nothing was enqueued.
@Suite struct LoginAcceptedEncodingTests {
    @Test(arguments: [nil, "01J9Z3"] as [String?])
    func writesWhatTheKeyedContainerWrites(jobId: String?) throws {
        let accepted = LoginRoutes.Accepted(enqueued: jobId != nil, eventId: "e-1", jobId: jobId)
        let ours = String(decoding: try StreamingJSONEncoder.api.encode(accepted), as: UTF8.self)
        let jobText = jobId.map { "\"\($0)\"" } ?? "null"
        #expect(ours == #"{"enqueued":\#(jobId != nil),"eventId":"e-1","jobId":\#(jobText)}"#)
        let foundation = try StreamingJSONEncoderTests.foundation(accepted)
        #expect(try StreamingJSONEncoderTests.parsed(Array(ours.utf8)) == StreamingJSONEncoderTests.parsed(foundation))
    }
}
