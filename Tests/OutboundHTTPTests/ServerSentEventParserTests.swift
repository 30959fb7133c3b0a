import OutboundHTTP
import Testing

struct ServerSentEventParserTests {
    /// Feeds the pieces in order and returns every event dispatched.
    private func parse(_ pieces: [[UInt8]]) -> [ServerSentEvent] {
        var parser = ServerSentEventParser()
        return pieces.flatMap { parser.feed($0) }
    }

    private func parse(_ text: String) -> [ServerSentEvent] { parse([Array(text.utf8)]) }

    @Test func dataFieldsAreJoinedByLineFeedsAndDispatchedAtABlankLine() {
        #expect(parse("data: a\n\ndata: b\ndata: c\n\n") == [.init(data: "a"), .init(data: "b\nc")])
    }

    @Test func commentsAndUnknownFieldsAreIgnoredEventAndIDAreKept() {
        let events = parse(": keep-alive\nevent: chunk\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\n:\ndata: y\n\n")
        #expect(events == [.init(type: "chunk", data: "x", lastEventID: "7"), .init(data: "y", lastEventID: "7")])
    }

    @Test func oneSpaceAfterTheColonIsDroppedAndAFieldWithoutColonIsEmpty() {
        #expect(parse("data:x\n\ndata:  x\n\ndata\n\n") == [.init(data: "x"), .init(data: " x"), .init(data: "")])
    }

    @Test func anEventWithoutDataIsNotDispatched() {
        #expect(parse("event: ping\n\n\n\ndata: a\n\n") == [.init(data: "a")])
    }

    @Test func linesEndAtCRLFOrLFOrCR() {
        let expected: [ServerSentEvent] = [.init(data: "a\nb")]
        #expect(parse("data: a\r\ndata: b\r\n\r\n") == expected)
        #expect(parse("data: a\rdata: b\r\r") == expected)
        #expect(parse("data: a\ndata: b\n\n") == expected)
    }

    /// A CR ending one piece and the LF starting the next are one line end, not a line end and a blank line (which
    /// would dispatch `a` alone).
    @Test func aCRLFSplitAcrossPiecesIsOneLineEnd() {
        #expect(parse([Array("data: a\r".utf8), Array("\ndata: b\r\n\r\n".utf8)]) == [.init(data: "a\nb")])
    }

    /// Every byte a piece of its own: lines split anywhere, a multi-byte character's bytes apart.
    @Test func piecesMayEndAnywhereEvenInsideACharacter() {
        let text = "data: {\"content\":\"Reis 🍚 hat ü 28 g\"}\r\n\r\ndata: [DONE]\n\n"
        let events = parse(Array(text.utf8).map { [$0] })
        #expect(events == [.init(data: "{\"content\":\"Reis 🍚 hat ü 28 g\"}"), .init(data: "[DONE]")])
        // And split in two at every position.
        let bytes = Array(text.utf8)
        for cut in 0...bytes.count {
            #expect(parse([Array(bytes[..<cut]), Array(bytes[cut...])]) == events, "cut at \(cut)")
        }
    }

    @Test func aTrailingPartialEventIsDiscarded() {
        #expect(parse("data: a\n\ndata: b\n") == [.init(data: "a")])
        #expect(parse("data: a\n\ndata: b") == [.init(data: "a")])
    }

    @Test func aByteOrderMarkAtTheStartIsSkipped() {
        #expect(parse([[0xEF, 0xBB, 0xBF] + Array("data: a\n\n".utf8)]) == [.init(data: "a")])
    }
}
