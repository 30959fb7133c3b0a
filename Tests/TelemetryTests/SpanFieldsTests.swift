import Testing

@testable import Traces

/// A recorded span's attributes, kept as the OTLP bytes the exporter sends (`OTLPExporterTests` decodes those with
/// the OpenTelemetry project's own types): what is set reads back the same, through both APIs.
struct SpanFieldsTests {
    @Test func everyKindOfValueReadsBackAsItWasSet() {
        var fields = SpanFields(capacity: 4)
        fields.append("text", "café ☕")
        fields.append("count", .int(-3))
        fields.append("large", .int(.max))
        fields.append("flag", false)
        fields.append("ratio", .double(0.25))
        fields.append("tags", .other(.stringArray(["a", "b"])))
        fields.append("ids", .other(.int64Array([1, 2])))
        fields.append("empty", "")
        #expect(fields["text"] == .string("café ☕") && fields["count"] == .int(-3) && fields["large"] == .int(.max))
        #expect(fields["flag"] == .bool(false) && fields["ratio"] == .double(0.25) && fields["empty"] == .string(""))
        #expect(fields["tags"] == .other(.stringArray(["a", "b"])) && fields["ids"] == .other(.int64Array([1, 2])))
        #expect(fields["missing"] == nil)
        let attributes = fields.attributes
        #expect(attributes["count"]?.toSpanAttribute() == .int64(-3) && attributes["tags"]?.toSpanAttribute() == .stringArray(["a", "b"]))
        #expect(SpanFields(attributes).entries.count == 8)
    }

    /// A key set again is written once, with its last value: a long value around it moves nothing else.
    @Test func aKeySetAgainKeepsOnlyItsLastValue() {
        var fields: SpanFields = ["a": "1", "b": .string(String(repeating: "x", count: 300)), "c": 3]
        fields.set("b", "short")
        fields.set("a", 2)
        #expect(fields.entries.map(\.key) == ["c", "b", "a"])
        #expect(fields["a"] == .int(2) && fields["b"] == .string("short") && fields["c"] == .int(3))
        var more: SpanFields = ["c": 4, "d": true]
        more.set(fields)
        #expect(more.entries.map(\.key) == ["d", "c", "b", "a"] && more["c"] == .int(3))
    }

    /// A short attribute, put together on the stack, is the same bytes as one written part by part; past a length
    /// byte's reach, or of another type, it is not taken that way and nothing is written.
    @Test func aShortAttributeIsWrittenAsTheLongWayWritesIt() {
        let values: [SpanFields.Value] = [
            "", "héllo ✓", .string(String(repeating: "v", count: 100)), 0, 1, 127, 128, -1, .int(.max), .int(.min), true, false,
        ]
        for key in ["k", "messaging.message.id", String(repeating: "k", count: 110)] {
            for value in values {
                var short = ProtobufWriter()
                var long = ProtobufWriter()
                let taken = short.shortKeyValue(9, key, value)
                long.message(9) { $0.keyValue(key, value) }
                #expect(taken == (long.bytes.count <= 2 + 0x7f), "\(key.count) \(value)")
                if taken { #expect(short.bytes == long.bytes, "\(key.count) \(value)") } else { #expect(short.bytes.isEmpty) }
            }
        }
        var other = ProtobufWriter()
        #expect(!other.shortKeyValue(9, "ratio", .double(0.25)) && !other.shortKeyValue(16, "k", "v") && other.bytes.isEmpty)
    }
}
