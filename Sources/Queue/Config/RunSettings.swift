/// What a worker reads of a kind for each job it runs, copied out of its ``JobKindSpec`` once: a spec holds strings,
/// schemas and schedules, and copying one per lookup (3 per job) was 5% of a no-op worker's CPU (`perf`, 2026-11-27).
/// Nothing here is reference-counted, so a lookup is a plain copy.
public struct RunSettings: Sendable {
    public let timeout: Duration
    public let retention: Retention
    public let backoff: Backoff
    /// The kind's event log's lifetime (``JobKindSpec/eventsLifetime``), nil without `events: true`.
    public let eventsLifetime: Duration?
    /// A fair kind with a rate limit: its jobs leave their window when they take their token (``LaneGate``).
    public let gated: Bool

    init(_ spec: JobKindSpec) {
        timeout = spec.timeout
        retention = spec.retention
        backoff = spec.backoff
        eventsLifetime = spec.eventsLifetime
        gated = spec.fairness != nil && spec.rateLimit != nil
    }
}
