import Foundation
import OutboundHTTP
import Queue
import Redis

/// A token bucket per provider, kept in Redis and shared by every worker process, so fifty workers together
/// never call a provider faster than its limit (`rate_limit:` in `jobs/<kind>.yml`).
///
/// The bucket refills by the Redis server's clock (`TIME`), never a worker's: machines whose clocks disagree
/// still share one budget. Taking a token is one atomic script, so two workers can never spend the same token.
package struct RateLimiter: Sendable {
    let redis: RedisClient
    let prefix: String
    /// Told of each wait for a token (`/metrics`), with the bucket's name as the provider.
    let observer: (any HTTPClientObserver)?

    package init(redis: RedisClient, prefix: String, observer: (any HTTPClientObserver)? = nil) {
        self.redis = redis
        self.prefix = prefix
        self.observer = observer
    }

    /// The bucket's Redis key: `{prefix}:ratelimit:{name}`.
    package func key(_ name: String) -> String { "\(prefix):ratelimit:\(name)" }

    /// Waits until the bucket `name` grants a token. Cancelling the task ends the wait (`CancellationError`)
    /// without spending a token.
    /// - Parameters:
    ///   - perSecond: tokens added per second (the sustained rate).
    ///   - burst: the bucket's capacity (a full bucket lets this many calls go at once).
    ///
    /// A fair job past its lane (``LaneGate/current`` is set) takes its turn instead of racing for the token: the
    /// script books it the next token the bucket will have (the bucket may owe up to `burst` tokens), in the order the
    /// jobs ask, so the jobs of the window get tokens in the order the lanes let them through. Racing, the waiters that
    /// had asked first lost most (their longer wait drew a longer jitter): one free user's chat waited 9.5 s behind a
    /// window of 10 (`ops/bench/fair-lane.sh`, 2026-11-27). Once its token is due, the job leaves the window.
    package func acquire(name: String, perSecond: Double, burst: Int) async throws {
        precondition(perSecond > 0 && burst >= 1, "a rate limit needs a positive rate and a burst of at least 1")
        let keys = [key(name)]
        let gate = LaneGate.current
        let arguments = Self.arguments(perSecond, burst, booking: gate != nil)
        while true {
            try Task.checkCancellation()
            let (wait, booked) = try pause(after: await redis.run(Self.script, keys: keys, arguments: arguments), name: name)
            if let wait { try await Self.sleep(for: wait) }
            if wait == nil || booked {
                // The next lane's job moves up.
                if let gate { await gate.pass() }
                return
            }
        }
    }

    /// Out of line: `Task.sleep`'s state would otherwise be part of `acquire`'s frame, which every job waiting on
    /// the provider keeps (the last 100 bytes of it took a new 1 KB slab per job).
    @inline(never)
    private static func sleep(for wait: Duration) async throws { try await Task.sleep(for: wait) }

    // The synchronous parts, out of `acquire`'s async frame (kept while a job waits: see `AIClient.complete`).

    @inline(never)
    private static func arguments(_ perSecond: Double, _ burst: Int, booking: Bool) -> [String] {
        [String(perSecond), String(burst), booking ? "1" : "0"]
    }

    /// The script's answer: no wait (a token now); a wait then the token (`booked`: the script booked it, due then);
    /// or a wait before asking again.
    @inline(never)
    private func pause(after reply: RedisValue, name: String) throws -> (wait: Duration?, booked: Bool) {
        guard let answer = reply.int else {
            throw RedisError(.protocolError, "rate limit script answered \(reply)")
        }
        if answer == 0 { return (nil, false) }
        observer?.rateLimitWaited(provider: name)
        // A booked token is due at a set time: no jitter.
        if answer < 0 { return (.microseconds(-answer), true) }
        // A little jitter, so the workers that all learnt the same refill time do not all ask at once.
        let jitter = Int.random(in: 0...max(1, answer / 10))
        return (.microseconds(answer + jitter), false)
    }

    /// Waits for a token of the kind's bucket (`rate_limit:` in its job file); returns at once for a kind without one.
    /// Always inlined: a frame of its own would sit, with every held job, between the caller's and `acquire`'s.
    @inline(__always)
    package func acquire(forKind kind: String, catalog: JobCatalog) async throws {
        guard let limit = Self.limit(forKind: kind, catalog) else { return }
        try await acquire(name: limit.name, perSecond: limit.perSecond, burst: limit.burst)
    }

    /// The kind's limit, looked up outside the async callers: their frames, kept while the job waits on the provider,
    /// would otherwise hold a copy of the kind's whole spec (see ``AIClient/complete(_:_:)``).
    @inline(never)
    static func limit(forKind kind: String, _ catalog: JobCatalog) -> RateLimit? { catalog[kind]?.rateLimit }

    /// KEYS[1] the bucket (hash: `tokens`, `ts` in µs of the server clock); ARGV rate per second, burst, booking ('1':
    /// book the next token rather than wait to race for it). Returns 0 when a token was taken, minus the µs until a
    /// booked token is due (the bucket owes it: `tokens` below zero, by a minute's worth at most), else the µs until one will
    /// be there. The key expires once a full
    /// bucket would have refilled, so idle buckets cost no memory.
    static let script = RedisScript(
        name: "ratelimit-acquire",
        source: """
            local rate = tonumber(ARGV[1])
            local burst = tonumber(ARGV[2])
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
            local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
            local tokens = tonumber(state[1])
            local ts = tonumber(state[2])
            if tokens == nil or ts == nil then
              tokens = burst
              ts = now
            end
            if now > ts then
              tokens = math.min(burst, tokens + (now - ts) * rate / 1000000)
            end
            local ttl = math.ceil(burst / rate * 1000) + 1000
            if tokens >= 1 then
              redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'ts', tostring(now))
              redis.call('PEXPIRE', KEYS[1], ttl)
              return 0
            end
            local wait = math.max(1, math.ceil((1 - tokens) * 1000000 / rate))
            if ARGV[3] == '1' and tokens - 1 >= -math.max(burst, rate * 60) then
              -- Booked: the token the bucket will have in `wait`, owed until then (a later caller waits behind it).
              redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'ts', tostring(now))
              redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens + 1) / rate * 1000) + 1000)
              return -wait
            end
            redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
            redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
            return wait
            """)
}

extension WorkerServices {
    /// The process's view of the shared provider buckets (under the queue's key prefix).
    package var rateLimiter: RateLimiter { RateLimiter(redis: redis, prefix: prefix, observer: http.observer) }

    /// Waits for a token of the kind's provider bucket (`rate_limit:` in `jobs/<kind>.yml`); returns at once when
    /// the kind has none. Call it right before each outbound request.
    package func acquire(forKind kind: String) async throws {
        try await rateLimiter.acquire(forKind: kind, catalog: catalog)
    }
}
