import JSON
import Testing

@testable import Queue

@Suite struct JSONSchemaTests {
    private func violations(_ schema: JSONValue, _ value: JSONValue) throws -> [String] {
        try JSONSchema(schema).validate(value).map(\.description)
    }

    private func schemaError(_ schema: JSONValue) -> SchemaError? {
        do {
            _ = try JSONSchema(schema)
            return nil
        } catch {
            return error
        }
    }

    @Test func types() throws {
        #expect(try violations(["type": "string"], "x").isEmpty)
        #expect(try violations(["type": "string"], 1) == ["expected string, got integer"])
        #expect(try violations(["type": "integer"], 3).isEmpty)
        #expect(try violations(["type": "integer"], 3.0).isEmpty)
        #expect(try violations(["type": "integer"], 3.5) == ["expected integer, got number"])
        #expect(try violations(["type": "number"], 3).isEmpty)  // an int is also a number
        #expect(try violations(["type": "number"], 3.5).isEmpty)
        #expect(try violations(["type": "boolean"], 1) == ["expected boolean, got integer"])
        #expect(try violations(["type": "integer"], true) == ["expected integer, got boolean"])
        #expect(try violations(["type": "null"], nil).isEmpty)
        #expect(try violations(["type": "array"], [:]) == ["expected array, got object"])
        #expect(try violations(["type": "object"], []) == ["expected object, got array"])
        #expect(try violations(["type": ["string", "null"]], nil).isEmpty)
        #expect(try violations(["type": ["string", "null"]], 2) == ["expected string or null, got integer"])
    }

    @Test func enumAndConst() throws {
        #expect(try violations(["enum": ["a", 1]], 1.0).isEmpty)
        #expect(try violations(["enum": ["a", 1]], "b") == [#"must be one of "a", 1; got "b""#])
        #expect(try violations(["const": ["x": 1]], ["x": 1]).isEmpty)
        #expect(try violations(["const": "v"], "w") == [#"must be "v"; got "w""#])
        #expect(try violations(["const": nil], nil).isEmpty)
        #expect(try violations(["const": nil], 0) == ["must be null; got 0"])
    }

    @Test func numericBounds() throws {
        let schema: JSONValue = ["minimum": 0, "maximum": 10]
        #expect(try violations(schema, 0).isEmpty)
        #expect(try violations(schema, 10).isEmpty)
        #expect(try violations(schema, -1) == ["must be >= 0, got -1"])
        #expect(try violations(schema, 10.5) == ["must be <= 10, got 10.5"])
        let exclusive: JSONValue = ["exclusiveMinimum": 0, "exclusiveMaximum": 1.5]
        #expect(try violations(exclusive, 1).isEmpty)
        #expect(try violations(exclusive, 0) == ["must be > 0, got 0"])
        #expect(try violations(exclusive, 1.5) == ["must be < 1.5, got 1.5"])
        #expect(try violations(schema, "11").isEmpty)  // bounds apply to numbers only
    }

    @Test func stringLengthCountsCodePoints() throws {
        let schema: JSONValue = ["minLength": 2, "maxLength": 3]
        #expect(try violations(schema, "é😀").isEmpty)
        #expect(try violations(schema, "a") == ["must be at least 2 characters long, got 1"])
        #expect(try violations(schema, "abcd") == ["must be at most 3 characters long, got 4"])
        #expect(try violations(schema, "😀😀😀😀") == ["must be at most 3 characters long, got 4"])
    }

    @Test func patternIsUnanchored() throws {
        #expect(try violations(["pattern": "b+"], "abbc").isEmpty)
        #expect(try violations(["pattern": "^b"], "abc") == ["does not match the pattern '^b'"])
        #expect(try violations(["pattern": "^[0-9]{4}$"], "2026").isEmpty)
    }

    @Test(arguments: [
        ("uuid", "3F2504E0-4F89-11D3-9A0C-0305E82C3301", true),
        ("uuid", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", true),
        ("uuid", "3f2504e04f8911d39a0c0305e82c3301", false),
        ("uuid", "3f2504e0-4f89-11d3-9a0c-0305e82c330g", false),
        ("uuid", "", false),
        ("date-time", "2025-02-04T18:30:00Z", true),
        ("date-time", "2025-02-04T18:30:00.123+05:30", true),
        ("date-time", "2025-02-04t18:30:00z", true),
        ("date-time", "2024-02-29T00:00:00-00:00", true),
        ("date-time", "2025-02-29T00:00:00Z", false),
        ("date-time", "2025-02-04 18:30:00Z", false),
        ("date-time", "2025-02-04T18:30Z", false),
        ("date-time", "2025-02-04T24:00:00Z", false),
        ("date-time", "2025-02-04T18:30:00", false),
        ("date-time", "2025-02-04T18:30:00.Z", false),
        ("date-time", "2025-02-04T18:30:00+0530", false),
        ("date", "2028-02-29", true),
        ("date", "2026-02-29", false),
        ("date", "2026-13-01", false),
        ("date", "2026-1-01", false),
        ("email", "user@example.com", true),
        ("email", "first.last+tag@sub.example.co", true),
        ("email", "user@localhost", false),
        ("email", "no-at.example.com", false),
        ("email", "a@b@c.com", false),
        ("email", "sp ace@example.com", false),
        ("email", "user@example..com", false),
    ])
    func formats(format: String, value: String, valid: Bool) throws {
        let found = try violations(["format": .string(format)], .string(value))
        #expect(found == (valid ? [] : ["is not a valid \(format)"]))
    }

    @Test func arrays() throws {
        let schema: JSONValue = ["items": ["type": "integer"], "minItems": 1, "maxItems": 2]
        #expect(try violations(schema, [1, 2]).isEmpty)
        #expect(try violations(schema, []) == ["must have at least 1 items, got 0"])
        #expect(try violations(schema, [1, 2, 3]) == ["must have at most 2 items, got 3"])
        #expect(try violations(schema, [1, "x"]) == ["/1: expected integer, got string"])
    }

    @Test func objectsReportNestedPathsInStableOrder() throws {
        let schema: JSONValue = [
            "type": "object",
            "required": ["id", "meta"],
            "additionalProperties": false,
            "properties": [
                "id": ["type": "string", "format": "uuid"],
                "meta": [
                    "type": "object",
                    "required": ["when"],
                    "properties": [
                        "when": ["type": "string", "format": "date-time"],
                        "tags": ["type": "array", "items": ["type": "object", "properties": ["a/b": ["type": "integer"]]]],
                    ],
                    "additionalProperties": ["type": "string"],
                ],
            ],
        ]
        let value: JSONValue = [
            "zeta": 1, "id": "nope", "extra": true,
            "meta": ["tags": [["a/b": 1], ["a/b": "x"]], "other": 5],
        ]
        #expect(
            try violations(schema, value) == [
                "/extra: is not an allowed property (allowed: id, meta)",
                "/id: is not a valid uuid",
                "/meta/when: is required",
                "/meta/other: expected string, got integer",
                "/meta/tags/1/a~1b: expected integer, got string",
                "/zeta: is not an allowed property (allowed: id, meta)",
            ])
        let first = try JSONSchema(schema).validate(value).first
        #expect(first?.path == "/extra")
        #expect(try violations(schema, ["id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "meta": ["when": "2026-01-01T00:00:00Z"]]).isEmpty)
    }

    @Test func anyAcceptsEverythingAndAnnotationsAreIgnored() throws {
        #expect(JSONSchema.any.validate(["a": [1, nil]]).isEmpty)
        #expect(JSONSchema.any.validate(3).isEmpty)
        #expect(JSONSchema.anyObject.validate([:]).isEmpty)
        #expect(JSONSchema.anyObject.validate(3).count == 1)
        #expect(try violations(["description": "x", "title": "y", "type": "integer"], 1).isEmpty)
        // The contract generator's annotations (jobs/*.yml), and examples.
        #expect(try violations(["x-swift-type": "Int64", "x-swift-name": "photoID", "examples": ["1"], "type": "string"], "2").isEmpty)
    }

    @Test func oneOfMatchesExactlyOneBranch() throws {
        let schema: JSONValue = [
            "oneOf": [["type": "object", "required": ["users"]], ["type": "object", "required": ["userId"]]]
        ]
        #expect(try violations(schema, ["users": 1]).isEmpty)
        #expect(try violations(schema, ["userId": "u"]).isEmpty)
        #expect(try violations(schema, [:]) == ["matches none of the oneOf schemas"])
        #expect(try violations(schema, ["users": 1, "userId": "u"]) == ["matches 2 of the oneOf schemas, not exactly one"])
    }

    struct BadSchema: Sendable, CustomTestStringConvertible {
        var schema: JSONValue
        var path: String
        var reason: String
        var testDescription: String { schema.jsonString }
    }

    static let badSchemas: [BadSchema] = [
        BadSchema(schema: ["requird": ["a"]], path: "/requird", reason: "unknown schema keyword 'requird'"),
        BadSchema(schema: ["properties": ["a": ["format": "uid"]]], path: "/properties/a/format", reason: "unknown format \"uid\""),
        BadSchema(schema: ["properties": ["a": ["type": "text"]]], path: "/properties/a/type", reason: "unknown type \"text\""),
        BadSchema(schema: ["type": ["string", "txt"]], path: "/type/1", reason: "unknown type"),
        BadSchema(schema: ["minimum": 5, "maximum": 1], path: "/maximum", reason: "maximum is below minimum"),
        BadSchema(schema: ["minLength": -1], path: "/minLength", reason: "non-negative integer"),
        BadSchema(schema: ["minItems": 3, "maxItems": 2], path: "/maxItems", reason: "below minItems"),
        BadSchema(schema: ["pattern": "("], path: "/pattern", reason: "not a valid regular expression"),
        BadSchema(schema: ["enum": []], path: "/enum", reason: "non-empty array"),
        BadSchema(schema: ["required": ["a", "a"]], path: "/required/1", reason: "listed twice"),
        BadSchema(
            schema: ["required": ["b"], "additionalProperties": false, "properties": ["a": [:]]], path: "/required/0",
            reason: "'b' is required but not under properties"),
        BadSchema(schema: ["items": "string"], path: "/items", reason: "a schema must be an object"),
        BadSchema(schema: ["additionalProperties": 1], path: "/additionalProperties", reason: "a schema must be an object"),
        BadSchema(schema: ["minimum": "1"], path: "/minimum", reason: "must be a number"),
        BadSchema(schema: ["description": 1], path: "/description", reason: "must be a string"),
        BadSchema(schema: "string", path: "", reason: "a schema must be an object"),
        BadSchema(schema: ["oneOf": []], path: "/oneOf", reason: "non-empty array of schemas"),
        BadSchema(schema: ["oneOf": [["requird": ["a"]]]], path: "/oneOf/0/requird", reason: "unknown schema keyword"),
        BadSchema(schema: ["examples": "1"], path: "/examples", reason: "must be an array"),
    ]

    @Test(arguments: badSchemas)
    func schemaErrors(bad: BadSchema) {
        let error = schemaError(bad.schema)
        #expect(error?.path == bad.path)
        #expect(error?.reason.contains(bad.reason) == true, "\(String(describing: error))")
    }
}
