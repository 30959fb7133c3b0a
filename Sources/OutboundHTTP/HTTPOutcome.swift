/// How a job should treat the result of a call.
package enum HTTPOutcome: Sendable, Equatable {
    case success
    /// Try again later: the network, a timeout, 408, 429 or 5xx.
    case retryable
    /// Trying again will not help: another 4xx, or a request the client refuses.
    case permanent
}

extension HTTPResponse {
    /// 2xx/3xx → success; 408, 429 and 5xx → retryable; any other status → permanent.
    package var outcome: HTTPOutcome {
        switch status {
        case 200..<400: .success
        case 408, 429, 500...: .retryable
        default: .permanent
        }
    }
}

extension HTTPClientError {
    /// A malformed request or an oversized answer fails the same way every time; everything else may pass later.
    package var outcome: HTTPOutcome {
        switch code {
        case .invalidURL, .invalidRequest, .responseTooLarge: .permanent
        case .connect, .timeout, .tls, .cancelled, .shutdown, .transport: .retryable
        }
    }
}
