import Synchronization

/// A response whose status and headers have arrived and whose body arrives as it comes
/// (``HTTPClient/stream(_:connectTimeout:totalTimeout:)``).
package struct HTTPStreamingResponse: Sendable {
    package var status: Int
    /// In the order received, names as sent by the server; interim (1xx) responses' headers are dropped.
    package var headers: [(name: String, value: String)]
    /// The body, in the pieces libcurl read it in. Read it to its end or drop it: dropping it, or cancelling the task
    /// that reads it, aborts the transfer.
    package var body: HTTPResponseBody

    /// The first header of that name, compared case-insensitively.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The head with the whole body, for a response the caller reads whole after all (an error's JSON).
    package func collect() async throws(HTTPClientError) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers, body: try await body.collect())
    }
}

/// A streamed response's body: chunks of bytes, in order, as libcurl hands them over. It ends when the response
/// does, or throws the ``HTTPClientError`` that ended the transfer (``HTTPClientError/Code/responseTooLarge``
/// past ``HTTPClientOptions/maxResponseBytes``, `.timeout` past the total timeout, `.transport` for a connection
/// closed mid-body, `.cancelled` when the reading task was cancelled): a body that ends without an error is whole.
package struct HTTPResponseBody: AsyncSequence, Sendable {
    package typealias Element = [UInt8]
    package typealias Failure = HTTPClientError

    let chunks: AsyncThrowingStream<[UInt8], any Error>
    let sink: BodySink

    package struct AsyncIterator: AsyncIteratorProtocol {
        package typealias Failure = HTTPClientError
        var base: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator
        let sink: BodySink

        package mutating func next(isolation actor: isolated (any Actor)?) async throws(HTTPClientError) -> [UInt8]? {
            do {
                if let chunk = try await base.next(isolation: actor) { return chunk }
            } catch let error as HTTPClientError {
                throw error
            } catch {
                throw HTTPClientError(.transport, "\(error)")
            }
            // The stream also ends, without an error, when the reading task is cancelled: only the sink knows
            // whether the body came whole.
            guard sink.endedWhole, !Task.isCancelled else { throw HTTPClientError(.cancelled, "the body's reader was cancelled") }
            return nil
        }

        package mutating func next() async throws(HTTPClientError) -> [UInt8]? {
            try await next(isolation: nil)
        }
    }

    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: chunks.makeAsyncIterator(), sink: sink) }

    /// The rest of the body in one array.
    package func collect() async throws(HTTPClientError) -> [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in self { bytes += chunk }
        return bytes
    }
}

/// Where a streamed transfer's body goes. The client's thread yields each chunk as libcurl reads it and never
/// waits: the buffer is unbounded, but the body as a whole is bounded by ``HTTPClientOptions/maxResponseBytes``, so
/// a slow reader holds at most what a whole response would.
final class BodySink: Sendable {
    private let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    private let whole = Atomic<Bool>(false)
    private let receivedStatus = Atomic<Int>(0)

    init(_ continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation) {
        self.continuation = continuation
    }

    /// Set before the stream is finished, so a reader that sees the end can tell a whole body from a cancelled one.
    var endedWhole: Bool { whole.load(ordering: .acquiring) }
    /// The final response's status once its head arrived, else 0.
    var status: Int { receivedStatus.load(ordering: .acquiring) }

    func received(status: Int) { receivedStatus.store(status, ordering: .releasing) }

    func yield(_ chunk: UnsafeRawBufferPointer) { continuation.yield([UInt8](chunk)) }

    /// Ends the body: whole, or with the transfer's error. Only the first call counts.
    func finish(_ result: Result<HTTPResponse, HTTPClientError>) {
        switch result {
        case .success(let response):
            receivedStatus.store(response.status, ordering: .releasing)
            whole.store(true, ordering: .releasing)
            continuation.finish()
        case .failure(let error):
            continuation.finish(throwing: error)
        }
    }
}
