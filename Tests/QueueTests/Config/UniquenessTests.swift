import Testing

@testable import Queue

@Suite struct UniquenessTests {
    @Test func rendersTopLevelFields() {
        let uniqueness = Uniqueness(keyTemplate: "push:${action}:${token}", ttl: .seconds(60))
        #expect(uniqueness.key(for: ["action": "register", "token": "abc", "other": 1]) == "push:register:abc")
        #expect(uniqueness.referencedFields == ["action", "token"])
    }

    @Test func rendersNumbersAndBooleansAsText() {
        let uniqueness = Uniqueness(keyTemplate: "n:${count}:${ratio}:${flag}:${whole}", ttl: .seconds(1))
        #expect(uniqueness.key(for: ["count": 7, "ratio": 0.5, "flag": true, "whole": 3.0]) == "n:7:0.5:true:3")
    }

    @Test func missingOrStructuredFieldsGiveNoKey() {
        let uniqueness = Uniqueness(keyTemplate: "a:${id}", ttl: .seconds(1))
        #expect(uniqueness.key(for: [:]) == nil)
        #expect(uniqueness.key(for: ["id": nil]) == nil)
        #expect(uniqueness.key(for: ["id": ["x": 1]]) == nil)
        #expect(uniqueness.key(for: ["id": [1]]) == nil)
        #expect(uniqueness.key(for: "not an object") == nil)
    }

    @Test func literalAndAdjacentPlaceholders() {
        #expect(Uniqueness(keyTemplate: "static", ttl: .seconds(1)).key(for: [:]) == "static")
        #expect(Uniqueness(keyTemplate: "${a}${b}", ttl: .seconds(1)).key(for: ["a": "x", "b": "y"]) == "xy")
        #expect(Uniqueness(keyTemplate: "broken:${a", ttl: .seconds(1)).key(for: ["a": "x"]) == nil)
    }
}
