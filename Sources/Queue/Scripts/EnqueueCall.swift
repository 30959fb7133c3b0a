import Redis

/// `enqueue.lua`: jobs with a unique key, a delay or a cron fire time, decided on the server.
struct EnqueueCall: ScriptCall {
    static var script: RedisScript { Scripts.enqueue }
    let keys: [String]
    private(set) var arguments: [String]

    init(_ queue: QueueKeys, count: Int) {
        keys = [queue.stream, queue.scheduled, queue.cron]
        arguments = [queue.base, String(count)]
        arguments.reserveCapacity(2 + count * 21)
    }

    /// 21 values per job. `cron`: the schedule's name and fire time; `catchUp`: a missed fire caught up at start-up;
    /// `givenID`: the producer chose the id, so the script refuses it while a record of that id lives; `eventsMs`: the
    /// lifetime of its event log (0: it keeps none); `startByMs`: it expires unless started within that time (0: never);
    /// `trace`: the producer's trace context (``JobField/trace``); `lane`: its fair lane (``FairLane``).
    mutating func add(
        id: JobID, kind: String, payload: String, maxAttempts: Int, visibilityMs: Int64, delayMs: Int64, uniqueKey: String?,
        uniqueTTLMs: Int64, cron: (name: String, fireMs: Int64, catchUp: Bool)?, owner: String?, reservation: String?,
        givenID: Bool, eventsMs: Int64 = 0, startByMs: Int64 = 0, trace: String? = nil, lane: FairLane? = nil
    ) {
        arguments += [
            id.rawValue, kind, payload, String(maxAttempts), String(visibilityMs), String(max(0, delayMs)), uniqueKey ?? "",
            String(uniqueTTLMs), cron?.name ?? "", cron.map { String($0.fireMs) } ?? "0",
            cron?.catchUp == true ? "catch-up" : "on-time", owner ?? "", reservation ?? "", givenID ? "1" : "",
            eventsMs > 0 ? String(eventsMs) : "", startByMs > 0 ? String(startByMs) : "", trace ?? "",
        ]
        if let lane {
            arguments += [lane.name, String(lane.window), lane.gated ? "1" : "", lane.weight.map(String.init) ?? ""]
        } else {
            arguments += ["", "", "", ""]
        }
    }
}
