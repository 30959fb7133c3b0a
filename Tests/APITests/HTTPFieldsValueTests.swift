import HTTPTypes
import Testing

@testable import API

/// `HTTPFields.value(_:)` reads what the library's getter reads: one field's value, nil for none, repeated fields
/// joined as the getter joins them (commas; semicolons for `Cookie`), names in any case.
@Suite struct HTTPFieldsValueTests {
    @Test func readsOneFieldAndNoneAsTheGetterDoes() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .contentType, value: "application/json"))
        fields.append(HTTPField(name: HTTPField.Name("TraceParent")!, value: "00-abc"))
        #expect(fields.value(.contentType) == "application/json")
        #expect(fields.value(HTTPField.Name("traceparent")!) == "00-abc")
        #expect(fields.value(.authorization) == nil)
        #expect(HTTPFields().value(.authorization) == nil)
    }

    @Test func joinsRepeatedFieldsAsTheGetterDoes() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .accept, value: "text/html"))
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        fields.append(HTTPField(name: .accept, value: "application/json"))
        fields.append(HTTPField(name: .cookie, value: "a=1"))
        fields.append(HTTPField(name: .cookie, value: "b=2"))
        #expect(fields.value(.accept) == "text/html, application/json")
        #expect(fields.value(.accept) == fields[.accept])
        #expect(fields.value(.cookie) == "a=1; b=2")
        #expect(fields.value(.contentType) == "text/plain")
    }
}
