import Testing

@testable import Traces

/// The wire format the exporter writes, at the lengths where a nested message's length prefix grows: the byte kept
/// for it suffices below 128, and a longer message moves its bytes to make room (OTLPExporterTests decode whole
/// requests with the OpenTelemetry project's own types; this walks the boundaries).
struct ProtobufWriterTests {
    @Test(arguments: [0, 1, 127, 128, 300, 16_383, 16_384, 70_000])
    func aNestedMessageOfAnyLengthReadsBackWhole(length: Int) throws {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        var writer = ProtobufWriter()
        writer.varint(1, 150)
        writer.message(2) { outer in
            outer.message(3) { inner in payload.withUnsafeBufferPointer { inner.bytes(4, $0) } }
            outer.varint(5, 1)
        }
        writer.fixed64(6, 0x0102_0304_0506_0708)

        let fields = try #require(ProtobufReader.fields(of: writer.bytes[...]))
        #expect(fields.map(\.field) == [1, 2, 6])
        guard case .number(150) = fields[0].value, case .bytes(let outer) = fields[1].value,
            case .number(0x0102_0304_0506_0708) = fields[2].value
        else {
            Issue.record("fields \(fields)")
            return
        }
        let outerFields = try #require(ProtobufReader.fields(of: outer))
        #expect(outerFields.map(\.field) == [3, 5])
        guard case .bytes(let inner) = outerFields[0].value, let innerFields = ProtobufReader.fields(of: inner),
            case .bytes(let read) = innerFields.first?.value
        else {
            Issue.record("inner \(outerFields)")
            return
        }
        #expect(Array(read) == payload)
    }

    @Test func varintsTakeTheirShortestForm() {
        var writer = ProtobufWriter()
        writer.varint(1, 127)
        writer.varint(1, 128)
        writer.varint(1, UInt64.max)
        #expect(writer.bytes == [0x08, 0x7f, 0x08, 0x80, 0x01, 0x08] + Array(repeating: 0xff, count: 9) + [0x01])
    }
}
