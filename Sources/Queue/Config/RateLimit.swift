/// A kind's share of a provider's request budget (`rate_limit:` in `jobs/<kind>.yml`): a token bucket named after
/// the provider, shared in Redis by every worker process and every kind that names it, so fifty workers together
/// never exceed what the provider allows.
public struct RateLimit: Sendable, Equatable {
    /// The bucket (`[a-z0-9_-]+`), e.g. `ai`: kinds naming the same bucket share one budget.
    public var name: String
    /// Tokens added per second: the sustained rate.
    public var perSecond: Double
    /// The bucket's capacity: how many requests may go at once after a quiet spell.
    public var burst: Int

    public init(name: String, perSecond: Double, burst: Int) {
        self.name = name
        self.perSecond = perSecond
        self.burst = burst
    }
}
