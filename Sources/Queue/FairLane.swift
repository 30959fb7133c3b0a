import JSON

/// Where a fair job waits (``Fairness``): its lane, the window of its shard, and whether it holds its place in the
/// window until it takes its provider token (`gated`: a kind with a `rate_limit:`) or only until it starts, and its
/// lane's weight.
struct FairLane: Sendable {
    let name: String
    let window: Int
    let gated: Bool
    /// Its turns in a row each round (``Fairness/weight(of:)``); nil for a kind whose lanes are not weighted.
    let weight: Int?

    init(spec: JobKindSpec, payload: JSONValue, shards: Int, _ fairness: Fairness) {
        name = fairness.lane(of: payload)
        window = (fairness.window + shards - 1) / max(1, shards)
        gated = spec.rateLimit != nil
        weight = fairness.weightBy == nil ? nil : fairness.weight(of: payload)
    }
}
