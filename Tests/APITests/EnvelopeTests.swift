import Foundation
import JSON
import Testing

@testable import API

/// The success envelope's hand-written frame writes what encoding `Envelope.Success` writes, whatever the data.
@Suite struct EnvelopeTests {
    struct Empty: Encodable {}

    struct Answer: Encodable {
        var enqueued = true
        var eventId = "e-1"
        @Nullable var jobId: String? = nil
        var at = Date(timeIntervalSince1970: 1_732_233_600.25)
    }

    static let now = Date(timeIntervalSince1970: 1_795_326_414.6404157)

    static func viaCodable<T: Encodable>(_ data: T) throws -> String {
        let envelope = Envelope.Success(data: data, meta: Envelope.Meta(timestamp: now))
        return String(decoding: try StreamingJSONEncoder.api.encode(envelope), as: UTF8.self)
    }

    static func handWritten<T: Encodable>(_ data: T) throws -> String {
        String(decoding: try Envelope.successBytes(data, at: now), as: UTF8.self)
    }

    @Test func theFrameMatchesTheCodableEnvelope() throws {
        #expect(try Self.handWritten(Answer()) == Self.viaCodable(Answer()))
        #expect(try Self.handWritten([Answer(), Answer()]) == Self.viaCodable([Answer(), Answer()]))
        #expect(try Self.handWritten(Empty()) == Self.viaCodable(Empty()))
        #expect(try Self.handWritten("text \" with a quote") == Self.viaCodable("text \" with a quote"))
        #expect(try Self.handWritten(["k": JSONValue.null]) == Self.viaCodable(["k": JSONValue.null]))
    }

    @Test func theFrameIsTheSeedsEnvelope() throws {
        let text = try Self.handWritten(Empty())
        #expect(text == #"{"success":true,"data":{},"meta":{"timestamp":"2026-11-22T05:46:54.640Z","version":"v1"}}"#)
    }
}
