/// How long a failed job waits before its next attempt.
///
/// A struct around a private enum (as swift-jobs does) so new strategies can be added without
/// breaking callers that switch on nothing.
public struct Backoff: Sendable, Equatable {
    private enum Strategy: Sendable, Equatable {
        case exponential(base: Duration, max: Duration, jitter: Double)
        case fixed(delay: Duration, jitter: Double)
    }

    private let strategy: Strategy

    private init(_ strategy: Strategy) { self.strategy = strategy }

    /// `base * 2^(attempt-1)`, capped at `max`, then jittered.
    /// - Parameters:
    ///   - jitter: the fraction (0...1, clamped) of the delay that is randomised, so that jobs that
    ///     failed together (a provider outage) do not all retry in the same second.
    public static func exponential(base: Duration, max: Duration, jitter: Double) -> Backoff {
        Backoff(.exponential(base: base, max: Swift.max(base, max), jitter: clamp(jitter)))
    }

    /// The same delay before every retry, optionally jittered.
    public static func fixed(_ delay: Duration, jitter: Double = 0) -> Backoff {
        Backoff(.fixed(delay: delay, jitter: clamp(jitter)))
    }

    /// The delay before the next attempt.
    /// - Parameter attempt: attempts already made (1 after the first failure); values below 1 count as 1.
    public func delay(afterAttempt attempt: Int) -> Duration {
        var rng = SystemRandomNumberGenerator()
        return delay(afterAttempt: attempt, using: &rng)
    }

    /// As `delay(afterAttempt:)`, with a caller-supplied generator so tests can pin the jitter.
    public func delay<R: RandomNumberGenerator>(afterAttempt attempt: Int, using rng: inout R) -> Duration {
        let (undelayed, jitter) = unjitteredDelay(afterAttempt: attempt)
        guard jitter > 0 else { return undelayed }
        let random = Double.random(in: 0..<1, using: &rng)
        return undelayed * (1 - jitter * random)
    }

    /// The delay before jitter, and the jitter fraction: the upper bound of `delay(afterAttempt:)`.
    public func maximumDelay(afterAttempt attempt: Int) -> Duration {
        unjitteredDelay(afterAttempt: attempt).delay
    }

    private func unjitteredDelay(afterAttempt attempt: Int) -> (delay: Duration, jitter: Double) {
        switch strategy {
        case .fixed(let delay, let jitter):
            return (delay, jitter)
        case .exponential(let base, let max, let jitter):
            // Double step by step and stop at the cap: no overflow however large `attempt` is.
            var delay = base
            var doublings = Swift.max(attempt, 1) - 1
            while doublings > 0 && delay < max && delay > .zero {
                delay = delay * 2
                doublings -= 1
            }
            return (Swift.min(delay, max), jitter)
        }
    }

    private static func clamp(_ jitter: Double) -> Double {
        jitter.isFinite ? Swift.min(Swift.max(jitter, 0), 1) : 0
    }
}
