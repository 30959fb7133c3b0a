import Foundation
import OutboundHTTP
import Testing

struct HTTPResponseTests {
    @Test func headerLookupIgnoresCaseAndTakesTheFirst() {
        let response = HTTPResponse(status: 200, headers: [(name: "Content-Type", value: "a"), (name: "content-type", value: "b")])
        #expect(response.header("content-type") == "a")
        #expect(response.header("CONTENT-TYPE") == "a")
        #expect(response.header("Content-Length") == nil)
    }

    @Test func retryAfterDeltaSeconds() {
        #expect(HTTPResponse(status: 429, headers: [(name: "Retry-After", value: "120")]).retryAfter() == .seconds(120))
        #expect(HTTPResponse(status: 429, headers: [(name: "retry-after", value: " 0 ")]).retryAfter() == .zero)
    }

    /// 1994-11-06T08:49:37Z, the RFC 9110 example date, in the three forms a recipient must accept.
    @Test(arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func retryAfterHTTPDate(_ value: String) {
        let date = Date(timeIntervalSince1970: 784_111_777)
        let response = HTTPResponse(status: 503, headers: [(name: "Retry-After", value: value)])
        #expect(response.retryAfter(now: date.addingTimeInterval(-90)) == .seconds(90))
        // A date already past means "now", never a negative wait.
        #expect(response.retryAfter(now: date.addingTimeInterval(3600)) == .zero)
    }

    @Test(arguments: ["", "soon", "-5", "1.5", "12 seconds"])
    func retryAfterUnparseable(_ value: String) {
        #expect(HTTPResponse(status: 503, headers: [(name: "Retry-After", value: value)]).retryAfter() == nil)
    }

    @Test func retryAfterAbsent() {
        #expect(HTTPResponse(status: 503).retryAfter() == nil)
    }

    @Test func outcomeOfStatuses() {
        let expected: [(Int, HTTPOutcome)] = [
            (200, .success), (204, .success), (302, .success), (304, .success),
            (400, .permanent), (401, .permanent), (404, .permanent), (422, .permanent),
            (408, .retryable), (429, .retryable), (500, .retryable), (502, .retryable), (503, .retryable),
        ]
        for (status, outcome) in expected {
            #expect(HTTPResponse(status: status).outcome == outcome, "status \(status)")
        }
    }

    @Test func outcomeOfErrors() {
        let expected: [(HTTPClientError.Code, HTTPOutcome)] = [
            (.invalidURL, .permanent), (.invalidRequest, .permanent), (.responseTooLarge, .permanent),
            (.connect, .retryable), (.timeout, .retryable), (.tls, .retryable), (.transport, .retryable),
            (.cancelled, .retryable), (.shutdown, .retryable),
        ]
        for (code, outcome) in expected {
            #expect(HTTPClientError(code, "test").outcome == outcome, "\(code)")
        }
    }
}
