import JSON

/// A kind's fair lanes (`fair: { by: userId, window: 10 }` in `jobs/<kind>.yml`): its jobs wait in one lane per value
/// of the payload member `by` (a user), and the queue takes them round-robin across lanes, so a user with 150 jobs
/// waiting gets no more turns than a user with one.
///
/// At most `window` jobs of a queue's fair kinds are past their lane at once, on the stream or held by a worker; the
/// rest wait in their lanes, in Redis, and move up one by one, the next lane's turn each time a job leaves the window.
/// A job of a kind with a `rate_limit:` leaves it when it takes its provider token (the provider's budget, not the
/// workers, is what the lane waits for); any other when it starts. Kinds sharing a queue that set it must agree on
/// the window. A lane may be weighted by the job's class (its tier): `weights: { pro: 3 }` gives a pro user's lane three
/// turns in a row for a free user's one.
public struct Fairness: Sendable, Equatable {
    /// The payload member that names a job's lane (a string or a number; a job without it goes to the lane `-`).
    public var by: String
    /// How many of the queue's fair jobs may be past their lanes at once, across every worker (per shard: the window
    /// divided among the queue's shards, rounded up).
    public var window: Int
    /// The payload member naming a job's class (`weight_by: tier`), whose weight (`weights: { pro: 3 }`, 1 for a class
    /// not listed) is how many turns in a row its lane takes each round: a pro user's lane moves three jobs up where a
    /// free user's moves one. Nil: every lane has one turn.
    public var weightBy: String?
    public var weights: [String: Int]

    public static let maximumWindow = 1_000_000
    public static let maximumWeight = 100
    /// The window of a kind with no rate limit and no `window:`.
    public static let defaultWindow = 1000
    /// The lane of a job whose payload lacks the member.
    public static let keylessLane = "-"

    public init(by: String, window: Int, weightBy: String? = nil, weights: [String: Int] = [:]) {
        self.by = by
        self.window = window
        self.weightBy = weightBy
        self.weights = weights
    }

    /// The turns in a row that `payload`'s lane takes: its class's weight, 1 for a class not listed or none.
    public func weight(of payload: JSONValue) -> Int {
        guard let weightBy, case .string(let value) = payload[weightBy] else { return 1 }
        return weights[value] ?? 1
    }

    /// The window when the file gives none: one second of the kind's provider budget (jobs past their lanes wait for
    /// a token, so a longer window only makes a newcomer wait longer), else ``defaultWindow``.
    public static func defaultWindow(for rateLimit: RateLimit?) -> Int {
        guard let rateLimit else { return defaultWindow }
        return max(1, Int(rateLimit.perSecond.rounded(.up)))
    }

    /// The lane of `payload`: its member `by` as text (a string as it is, a number as its JSON text).
    public func lane(of payload: JSONValue) -> String {
        switch payload[by] {
        case .string(let value) where !value.isEmpty: value
        case .int(let value): String(value)
        case .double(let value) where value.isFinite:
            value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
        default: Self.keylessLane
        }
    }
}
