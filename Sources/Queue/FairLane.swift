import JSON

/// Where a fair job waits (``Fairness``): its lane, the window of its shard, and whether it holds its place in the
/// window until it takes its provider token (`gated`: a kind with a `rate_limit:`) or only until it starts.
struct FairLane: Sendable {
    let name: String
    let window: Int
    let gated: Bool

    init(spec: JobKindSpec, payload: JSONValue, shards: Int, _ fairness: Fairness) {
        name = fairness.lane(of: payload)
        window = (fairness.window + shards - 1) / max(1, shards)
        gated = spec.rateLimit != nil
    }
}
