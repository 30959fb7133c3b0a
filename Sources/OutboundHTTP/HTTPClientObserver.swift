/// What an ``HTTPClient`` tells its observer about each call: the seam `/metrics` hangs on, so callers only name
/// their provider (``HTTPRequest/provider``). Calls come from the caller's task (a streamed response's, when its body
/// ends: from the client's thread) and must not block.
package protocol HTTPClientObserver: Sendable {
    /// A call ended: with a response (`status`) or an error (`error`), after `duration` in the client.
    func requestFinished(provider: String, status: Int?, error: HTTPClientError.Code?, duration: Duration)
    /// A call waited for a token of its provider's rate limit before it was sent (one per wait).
    func rateLimitWaited(provider: String)
}
