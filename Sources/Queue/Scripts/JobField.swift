/// The fields of a job's record (hash `base..job:<id>`), as the scripts and the producers write them, and those of a
/// stream entry that carries its job (`id`, `kind`, `payload`, `max`, `vis`). The names are short because a record is
/// kept per job; `ScriptContractTests` checks that the Lua files write no other field of a record.
enum JobField: String, CaseIterable {
    case kind, payload
    case maxAttempts = "max"
    /// The visibility timeout (lease) in ms.
    case visibilityMs = "vis"
    case enqueuedMs = "enq"
    /// Absent while the job waits for its first start (`queued`).
    case status
    case attempts
    case startedMs = "start"
    /// The consumer that last started it.
    case worker
    /// The stream entry of its current delivery: only that delivery may record its outcome.
    case entry
    /// The cron fire time that enqueued it.
    case fireMs = "fire"
    /// How many times it was handed back for running isolated after a lease ran out.
    case lost
    case unique, owner
    /// What the job holds (`EnqueueOptions.reservation`): its end notes a settlement of it.
    case reservation = "resv"
    case runAtMs = "runAt"
    case finishedMs = "fin"
    case result
    case error = "err"
    /// The last ten attempts' errors, as JSON.
    case errors
    /// Outages in a row (each postpones it without spending an attempt).
    case waits
    /// Set on a running job an operator cancelled: the retention (ms) of its record once it ends as cancelled.
    case cancel = "cncl"
    /// The lifetime (ms) of the job's event log, for kinds with `events: true`: each state change is appended to it.
    case events = "ev"
    /// When (ms) the job must have started by (`start_by:`): a later start ends it `expired` instead.
    case startBy = "sby"
    /// The producer's trace context (`TraceCarrier`): every attempt's span continues the trace of the request that
    /// enqueued it. Only when the producer traced.
    case trace = "tp"
    /// Its fair lane (``Fairness``): it waited there, and holds a place in its queue's window once past it.
    case lane = "fair"
    /// `1`: it holds its place in the window until it takes its provider token (a kind with a rate limit).
    case gated = "fg"
    /// Only in a stream entry: the job's id.
    case id

    /// `fields[self]` of a record read whole.
    func of(_ fields: [String: String]) -> String? { fields[rawValue] }
}
