import Redis

/// Every Lua script of the queue engine, in one place. Each runs atomically on the Redis node that holds the
/// queue (all of a queue's keys share the `{queue}` hash tag). Times come from the server's clock (`TIME`),
/// so leases and schedules do not depend on the workers' clocks agreeing.
///
/// Key layout for queue `q` under prefix `p` (`base` = `p:{q}:`):
/// `base..stream` (stream of jobs, consumer group `workers`; acknowledged entries are trimmed from its head): an
/// entry names a job (`id`) whose record exists, or carries one enqueued without a record (`id`, `kind`, `payload`,
/// `max`, `vis`; its enqueue time is the entry id's), whose record the start script writes,
/// `base..job:<id>` (hash: the job's record; a queued job has no `status` and no `attempts` yet: they are written
/// when it starts),
/// `base..scheduled` / `base..retry` (zsets of delayed jobs and retries by due time in ms),
/// `base..dead` (zset by death time, capped), `base..stats` (hash of monotonic totals),
/// `base..unique:<key>` (string: the job id holding the key), `base..cron` (hash: schedule → last fire time),
/// channel `base..events` (`<id> <status>` when a job succeeds, fails or will be retried).
enum Scripts {
    /// Redis's clock, and whole numbers as text: the first lines of every script that needs the time.
    static let clock = """
        local function nowMs()
          local t = redis.call('TIME')
          return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        end
        -- A whole number as Redis should store it. Lua numbers are doubles, and redis.call turns one into text
        -- through printf's floating-point path ("%.14g"), which was 4% of Redis's time in the process benchmark:
        -- the per-job numbers go through the integer path instead.
        local function int(n) return string.format('%d', n) end

        """
    /// The helpers the delivery, finish and maintenance scripts share.
    static let prelude =
        clock + """
            -- A reply of alternating names and values (XINFO's shape) as a table.
            local function fieldsOf(flat)
              local fields = {}
              for i = 1, #flat, 2 do fields[flat[i]] = flat[i + 1] end
              return fields
            end
            local function pushHistory(key, attempt, at, message)
              local raw = redis.call('HGET', key, 'errors')
              local list = {}
              if raw then list = cjson.decode(raw) end
              table.insert(list, {attempt = attempt, at = at, error = message})
              while #list > 10 do table.remove(list, 1) end
              redis.call('HSET', key, 'errors', cjson.encode(list))
            end
            -- Drops the stream's finished head. Entries are acknowledged, never deleted one by one (an XDEL rewrote
            -- the entry's listpack node: 3.3 µs per job in the process benchmark): everything older than the oldest
            -- pending entry, or than the last delivered one when nothing is pending, has been delivered and acknowledged,
            -- and XTRIM … MINID ~ frees it a whole node at a time. The group's lag stays exact (it counts the rest).
            -- The oldest pending entry comes from the range form of XPENDING (a seek in the group's pending list), not
            -- the summary form, which walks every consumer the group ever had.
            local function trim(stream, group)
              local pending = redis.pcall('XPENDING', stream, group, '-', '+', 1)
              if pending.err then return end
              local oldest = pending[1] and pending[1][1]
              if not oldest then
                for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
                  local fields = fieldsOf(g)
                  if fields['name'] == group then oldest = fields['last-delivered-id'] end
                end
              end
              if oldest then redis.call('XTRIM', stream, 'MINID', '~', oldest) end
            end
            -- Moves a job to the dead set with its last error. The dead set is capped by count and age:
            -- the oldest entries go first, with their records, so it never grows without bound.
            local function bury(prefix, deadKey, statsKey, id, now, message, retention, cap, maxAge)
              local key = prefix .. 'job:' .. id
              local attempts = tonumber(redis.call('HGET', key, 'attempts') or '0')
              redis.call('HSET', key, 'status', 'failed', 'fin', now, 'err', message)
              pushHistory(key, attempts, now, message)
              if retention > 0 then redis.call('PEXPIRE', key, retention) end
              redis.call('ZADD', deadKey, now, id)
              redis.call('HINCRBY', statsKey, 'failed', 1)
              local old = redis.call('ZRANGEBYSCORE', deadKey, '-inf', now - maxAge, 'LIMIT', 0, 100)
              local excess = redis.call('ZCARD', deadKey) - cap
              if excess > 0 then
                for _, oid in ipairs(redis.call('ZRANGE', deadKey, 0, excess - 1)) do table.insert(old, oid) end
              end
              for _, oid in ipairs(old) do
                redis.call('DEL', prefix .. 'job:' .. oid)
                redis.call('ZREM', deadKey, oid)
              end
              redis.call('PUBLISH', prefix .. 'events', id .. ' failed')
            end
            -- The job an entry carries ({kind, payload, max, vis}), or nil when it only names one (`id`).
            local function carried(flat)
              if #flat <= 2 then return nil end
              local f = fieldsOf(flat)
              return {f['kind'], f['payload'], f['max'], f['vis']}
            end
            -- The 9 fields the worker reads per started job (the last: '1' when the job runs isolated, see start).
            local function started(out, id, entry, kind, payload, attempts, max, fire, enq, isolated)
              local n = #out
              out[n + 1], out[n + 2], out[n + 3], out[n + 4] = id, entry, kind, payload
              out[n + 5], out[n + 6], out[n + 7], out[n + 8] = attempts, max, fire, enq
              out[n + 9] = isolated or ''
            end
            -- Back to the end of the stream, as it was delivered (a carried job keeps what it carries).
            local function handBack(stream, group, entry, id, job)
              redis.call('XACK', stream, group, entry)
              if job then
                redis.call('XADD', stream, '*', 'id', id, 'kind', job[1], 'payload', job[2], 'max', job[3], 'vis', job[4])
              else
                redis.call('XADD', stream, '*', 'id', id)
              end
            end
            -- Marks delivered entries ({entry, id, carried job or nil}) as running and returns what the worker needs to
            -- run them. An entry that carries its job is its first delivery (a reclaim hands back a copy), so there is no
            -- record to read: it is written whole, in one call, with the entry id's time (Redis's clock) as its enqueue
            -- time.
            -- A job delivered more times than it has attempts (its workers died mid-job) is buried instead:
            -- a message that crashes workers never loops.
            -- A job whose last lease ran out (`lost`: its worker crashed, was killed or hung) runs isolated: only on a
            -- worker with nothing in flight (`idle`), alone in its batch, and that worker takes nothing else until it
            -- ends. Otherwise it goes back to the end of the stream (after 20 such turns it runs anyway, so a busy
            -- system cannot starve it). Without this, a job that crashes its worker is reclaimed with the jobs it took
            -- down, delivered in one batch with them, and takes them down again until they too are buried.
            -- `mode`: '1' the worker has nothing in flight; 'x' it has just been given a job to run isolated (hand
            -- everything back); else it is busy.
            local function start(stream, deadKey, statsKey, prefix, group, consumer, entries, deadRetention, deadCap, maxAge, mode)
              local now = nowMs()
              local nowText = int(now)
              local out = {}
              local idle = mode == '1'
              local alone = mode == 'x'
              for _, e in ipairs(entries) do
                local entry, id, job = e[1], e[2], e[3]
                local key = prefix .. 'job:' .. id
                if alone then
                  handBack(stream, group, entry, id, job)
                elseif job then
                  local enq = string.match(entry, '^%d+')
                  redis.call('HSET', key, 'kind', job[1], 'payload', job[2], 'max', job[3], 'vis', job[4], 'enq', enq,
                    'status', 'running', 'start', nowText, 'worker', consumer, 'entry', entry, 'attempts', '1')
                  started(out, id, entry, job[1], job[2], 1, tonumber(job[3]), '', enq)
                else
                  local f = redis.call('HMGET', key, 'kind', 'payload', 'max', 'status', 'fire', 'enq', 'attempts', 'lost')
                  if not f[1] or f[4] == 'succeeded' or f[4] == 'failed' then
                    redis.call('XACK', stream, group, entry)
                  else
                    -- Counted here and written with the status below: one call less per job than HINCRBY.
                    local attempts = tonumber(f[7] or '0') + 1
                    local max = tonumber(f[3])
                    local lost = tonumber(f[8] or '0')
                    if attempts > max then
                      redis.call('HSET', key, 'attempts', attempts)
                      redis.call('XACK', stream, group, entry)
                      bury(prefix, deadKey, statsKey, id, now,
                        'delivered ' .. (attempts - 1) .. ' times without finishing: its worker crashed, was killed or hung mid-job each time',
                        deadRetention, deadCap, maxAge)
                    elseif lost > 0 and not (idle and #out == 0) and lost < 20 then
                      redis.call('HSET', key, 'lost', lost + 1)
                      handBack(stream, group, entry, id, nil)
                    else
                      local isolated = ''
                      if lost > 0 then
                        redis.call('HDEL', key, 'lost')
                        alone = true
                        isolated = '1'
                      end
                      redis.call('HSET', key, 'status', 'running', 'start', nowText, 'worker', consumer, 'entry', entry,
                        'attempts', int(attempts))
                      started(out, id, entry, f[1], f[2], attempts, max, f[5] or '', f[6] or '', isolated)
                    end
                  end
                end
              end
              return out
            end

            """

    /// KEYS: stream, scheduled, cron. ARGV: prefix, count, then per job:
    /// id, kind, payload, maxAttempts, visibilityMs, delayMs, uniqueKey, uniqueTtlMs, cronName, fireMs, cronMode, owner.
    /// Returns per job: the id, `dup:<id of the holder>` for a taken unique key, or `skip` for a cron fire already done.
    static let enqueue = RedisScript(
        name: "enqueue",
        // Only the clock, not the prelude: an API request enqueues one job per call, and defining the prelude's helpers
        // was a tenth of the script's time. Each job's record is written in one HSET (a call per field group cost ~2 µs each), and
        // the enqueue time of a job that goes straight to the stream is its entry id's (Redis's clock, as `TIME`),
        // so `TIME` runs only for a delayed job.
        source: clock + """
            local stream, scheduled, cron = KEYS[1], KEYS[2], KEYS[3]
            local prefix, n = ARGV[1], tonumber(ARGV[2])
            local now = nil
            local out = {}
            for i = 0, n - 1 do
              local b = 2 + i * 12
              local id, kind, payload, max, vis = ARGV[b+1], ARGV[b+2], ARGV[b+3], ARGV[b+4], ARGV[b+5]
              local delay, ukey, uttl = tonumber(ARGV[b+6]), ARGV[b+7], ARGV[b+8]
              local cronName, fire, cronMode, owner = ARGV[b+9], ARGV[b+10], ARGV[b+11], ARGV[b+12]
              local result = id
              if cronName ~= '' then
                -- Exactly once per fire time, however many schedulers: the last fire time only moves forward.
                local last = redis.call('HGET', cron, cronName)
                if last and tonumber(last) >= tonumber(fire) then
                  result = 'skip'
                elseif not last and cronMode == 'catch-up' then
                  -- First run ever: record the baseline; there is nothing to catch up.
                  redis.call('HSET', cron, cronName, fire)
                  result = 'skip'
                else
                  redis.call('HSET', cron, cronName, fire)
                end
              end
              if result == id and ukey ~= '' then
                local holder = prefix .. 'unique:' .. ukey
                if not redis.call('SET', holder, id, 'NX', 'PX', uttl) then
                  result = 'dup:' .. (redis.call('GET', holder) or '')
                end
              end
              if result == id then
                local fields = {'kind', kind, 'payload', payload, 'max', max, 'vis', vis}
                if ukey ~= '' then fields[#fields + 1] = 'unique'; fields[#fields + 1] = ukey end
                if owner ~= '' then fields[#fields + 1] = 'owner'; fields[#fields + 1] = owner end
                if cronName ~= '' then fields[#fields + 1] = 'fire'; fields[#fields + 1] = fire end
                if delay > 0 then
                  now = now or nowMs()
                  fields[#fields + 1] = 'enq'; fields[#fields + 1] = int(now)
                  fields[#fields + 1] = 'runAt'; fields[#fields + 1] = int(now + delay)
                  redis.call('ZADD', scheduled, now + delay, id)
                else
                  local entry = redis.call('XADD', stream, '*', 'id', id)
                  fields[#fields + 1] = 'enq'; fields[#fields + 1] = string.match(entry, '^%d+')
                end
                redis.call('HSET', prefix .. 'job:' .. id, unpack(fields))
              end
              table.insert(out, result)
            end
            return out
            """)

    /// Non-blocking fetch and start in one round-trip. KEYS: stream, dead, stats.
    /// ARGV: prefix, group, consumer, count, deadRetentionMs, deadCap, deadMaxAgeMs, idle ('1': nothing in flight).
    /// Returns 9 fields per job: id, entry, kind, payload, attempt, maxAttempts, fireMs, enqueuedMs, isolated.
    static let reserve = RedisScript(
        name: "reserve",
        source: prelude + """
            local reply = redis.call('XREADGROUP', 'GROUP', ARGV[2], ARGV[3], 'COUNT', ARGV[4], 'STREAMS', KEYS[1], '>')
            if not reply then return {} end
            local entries = {}
            for _, e in ipairs(reply[1][2]) do table.insert(entries, {e[1], e[2][2], carried(e[2])}) end
            return start(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], entries,
              tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8])
            """)

    /// Starts entries that a blocking `XREADGROUP` delivered. KEYS: stream, dead, stats.
    /// ARGV: prefix, group, consumer, deadRetentionMs, deadCap, deadMaxAgeMs, idle, then per entry: entry, id, kind,
    /// payload, max, vis (kind empty for an entry that only names its job).
    static let start = RedisScript(
        name: "start",
        source: prelude + """
            local entries = {}
            for i = 8, #ARGV, 6 do
              local job = nil
              if ARGV[i+2] ~= '' then job = {ARGV[i+2], ARGV[i+3], ARGV[i+4], ARGV[i+5]} end
              table.insert(entries, {ARGV[i], ARGV[i+1], job})
            end
            return start(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], entries,
              tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7])
            """)

    /// Records a batch of outcomes in one round-trip. KEYS: stream, retry, dead, stats.
    /// ARGV: prefix, group, deadCap, deadMaxAgeMs, then per outcome: id, entry, outcome, text, ms.
    /// outcome `ok` (text = result JSON, ms = retention), `retry` (text = error, ms = delay),
    /// `dead` (text = error, ms = retention), `requeue` (handed back on shutdown: not an attempt), `wait` (a dependency
    /// was unreachable: text = error, ms = the first wait, doubled per outage in a row up to 30 s; not an attempt).
    /// It runs even when Redis is full (`maxmemory` with `noeviction`): Redis refuses a script for memory only at
    /// its first write, and this one's first write is `XACK`, which Redis never refuses, so the rest follows. Keep
    /// it first: recording mostly frees memory (acknowledged entries trimmed, expired records dropped), and a
    /// worker that could not record would leave its jobs leased until they ran again elsewhere. Enqueues, which only
    /// add, are refused meanwhile (OutageTests).
    static let finish = RedisScript(
        name: "finish",
        source: prelude + """
            local stream, retryKey, deadKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
            local prefix, group, cap, maxAge = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
            local now = nowMs()
            local nowText = int(now)
            local succeeded, retried = 0, 0
            -- Completion events go out only while someone listens (the API's job waiters): a PUBLISH per job to an
            -- empty channel still cost a call. A waiter subscribes before it reads the job's status, so it either
            -- counts here or sees the finished record.
            local listening = redis.call('PUBSUB', 'NUMSUB', prefix .. 'events')[2] > 0
            -- Every delivered entry is acknowledged, in calls of up to 500 entries rather than one per job; then the
            -- finished head of the stream goes.
            local entries = {}
            for i = 6, #ARGV, 5 do
              entries[#entries + 1] = ARGV[i]
              if #entries == 500 then
                redis.call('XACK', stream, group, unpack(entries))
                entries = {}
              end
            end
            if #entries > 0 then redis.call('XACK', stream, group, unpack(entries)) end
            trim(stream, group)
            for i = 5, #ARGV, 5 do
              local id, entry, outcome, text, msText = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3], ARGV[i+4]
              local ms = tonumber(msText)
              local key = prefix .. 'job:' .. id
              local f = redis.call('HMGET', key, 'status', 'attempts', 'entry')
              -- Only the delivery that holds the job may change it: a late answer from a worker whose lease
              -- expired (the job was handed to another) must not overwrite the newer state.
              if f[1] == 'running' and f[3] == entry then
                if outcome == 'ok' then
                  succeeded = succeeded + 1
                  if ms > 0 then
                    -- Kept for retention: what the job was, who ran it and how it ended. The delivery fields (the
                    -- stream entry, attempt limit and lease, the last error and retry time) go.
                    redis.call('HSET', key, 'status', 'succeeded', 'fin', nowText, 'result', text)
                    if f[2] == '1' then
                      redis.call('HDEL', key, 'entry', 'max', 'vis')
                    else
                      redis.call('HDEL', key, 'entry', 'max', 'vis', 'err', 'runAt', 'waits', 'lost')
                    end
                    redis.call('PEXPIRE', key, msText)
                  else
                    redis.call('DEL', key)
                  end
                  if listening then redis.call('PUBLISH', prefix .. 'events', id .. ' succeeded') end
                elseif outcome == 'retry' then
                  retried = retried + 1
                  redis.call('HSET', key, 'status', 'retrying', 'err', text, 'runAt', now + ms)
                  pushHistory(key, tonumber(f[2]), now, text)
                  redis.call('ZADD', retryKey, now + ms, id)
                  if listening then redis.call('PUBLISH', prefix .. 'events', id .. ' retrying') end
                elseif outcome == 'dead' then
                  bury(prefix, deadKey, statsKey, id, now, text, ms, cap, maxAge)
                elseif outcome == 'wait' then
                  -- An outage is not the job's fault: the attempt is given back, so however long the outage lasts
                  -- the job never reaches the dead set of it.
                  local waits = redis.call('HINCRBY', key, 'waits', 1)
                  local delay = math.min(30000, ms * 2 ^ math.min(waits - 1, 8))
                  redis.call('HINCRBY', key, 'attempts', -1)
                  redis.call('HSET', key, 'status', 'retrying', 'err', text, 'runAt', int(now + delay))
                  pushHistory(key, tonumber(f[2]), now, text)
                  redis.call('ZADD', retryKey, now + delay, id)
                  if listening then redis.call('PUBLISH', prefix .. 'events', id .. ' retrying') end
                elseif outcome == 'requeue' then
                  local status = 'queued'
                  if tonumber(f[2]) > 1 then status = 'retrying' end
                  redis.call('HINCRBY', key, 'attempts', -1)
                  redis.call('HSET', key, 'status', status)
                  redis.call('XADD', stream, '*', 'id', id)
                end
              end
            end
            if succeeded > 0 then redis.call('HINCRBY', statsKey, 'succeeded', succeeded) end
            if retried > 0 then redis.call('HINCRBY', statsKey, 'retried', retried) end
            return succeeded
            """)

    /// Moves due delayed jobs and retries onto the stream. KEYS: stream, scheduled, retry. ARGV: limit.
    /// Returns {moved, ms until the next due job or -1}.
    static let promote = RedisScript(
        name: "promote",
        source: prelude + """
            local now = nowMs()
            local moved = 0
            local nextDue = -1
            for k = 2, 3 do
              local due = redis.call('ZRANGEBYSCORE', KEYS[k], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
              for _, id in ipairs(due) do
                redis.call('XADD', KEYS[1], '*', 'id', id)
                moved = moved + 1
              end
              if #due > 0 then redis.call('ZREM', KEYS[k], unpack(due)) end
              local first = redis.call('ZRANGE', KEYS[k], 0, 0, 'WITHSCORES')
              if first[2] then
                local wait = math.max(0, tonumber(first[2]) - now)
                if nextDue < 0 or wait < nextDue then nextDue = wait end
              end
            end
            return {moved, nextDue}
            """)

    /// Hands back jobs whose lease ran out (their worker died or hung): the entry idle longer than the job's
    /// visibility timeout. A live worker's heartbeat (`XCLAIM … JUSTID`) resets the idle time, so it keeps its jobs.
    /// Consumers that hold nothing and were idle longer than `consumerIdleMs` are deleted (their workers are gone: a
    /// live one reads every few seconds, and a deleted consumer is made again by its next read).
    /// KEYS: stream. ARGV: prefix, group, minIdleMs, limit, consumerIdleMs. Returns the ids handed back.
    static let reclaim = RedisScript(
        name: "reclaim",
        source: prelude + """
            local stream, prefix, group = KEYS[1], ARGV[1], ARGV[2]
            local now = nowMs()
            local out = {}
            local pending = redis.call('XPENDING', stream, group, 'IDLE', tonumber(ARGV[3]), '-', '+', tonumber(ARGV[4]))
            for _, p in ipairs(pending) do
              local entry, consumer, idle = p[1], p[2], tonumber(p[3])
              local e = redis.call('XRANGE', stream, entry, entry)
              if #e == 0 then
                redis.call('XACK', stream, group, entry)
              else
                local flat = e[1][2]
                local id = flat[2]
                local key = prefix .. 'job:' .. id
                local f = redis.call('HMGET', key, 'vis', 'status', 'attempts', 'entry', 'kind')
                local job = carried(flat)
                if not f[5] and job then
                  -- Delivered but never started (its worker died between the read and the start): a copy of the
                  -- entry, once it has waited the job's visibility timeout.
                  if idle >= tonumber(job[4] or '30000') then
                    redis.call('XACK', stream, group, entry)
                    redis.call('XADD', stream, '*', unpack(flat))
                    table.insert(out, id)
                  end
                elseif not f[5] then
                  redis.call('XACK', stream, group, entry)
                elseif idle >= tonumber(f[1] or '30000') then
                  redis.call('XACK', stream, group, entry)
                  if f[2] == 'running' and f[4] == entry then
                    redis.call('HSET', key, 'status', 'retrying', 'lost', '1')
                    pushHistory(key, tonumber(f[3]), now, 'lease expired: worker ' .. consumer .. ' stopped renewing it')
                  end
                  if f[2] ~= 'succeeded' and f[2] ~= 'failed' then
                    redis.call('XADD', stream, '*', 'id', id)
                    table.insert(out, id)
                  end
                end
              end
            end
            trim(stream, group)
            local consumers = redis.pcall('XINFO', 'CONSUMERS', stream, group)
            if not consumers.err then
              for _, c in ipairs(consumers) do
                local fields = fieldsOf(c)
                if tonumber(fields['pending']) == 0 and tonumber(fields['idle']) > tonumber(ARGV[5]) then
                  redis.call('XGROUP', 'DELCONSUMER', stream, group, fields['name'])
                end
              end
            end
            return out
            """)

    /// Runs a waiting job now: a dead one (with a fresh set of attempts), a retry or a delayed job.
    /// KEYS: stream, scheduled, retry, dead. ARGV: prefix, id. Returns where it was, or nil.
    static let retryNow = RedisScript(
        name: "retry-now",
        source: prelude + """
            local prefix, id = ARGV[1], ARGV[2]
            local key = prefix .. 'job:' .. id
            if redis.call('EXISTS', key) == 0 then return nil end
            local names = {'scheduled', 'retry', 'dead'}
            for k = 2, 4 do
              if redis.call('ZREM', KEYS[k], id) == 1 then
                if k == 4 then
                  redis.call('PERSIST', key)
                  redis.call('HSET', key, 'attempts', 0, 'status', 'queued')
                  redis.call('HDEL', key, 'fin')
                end
                redis.call('HDEL', key, 'runAt')
                redis.call('XADD', KEYS[1], '*', 'id', id)
                return names[k - 1]
              end
            end
            return nil
            """)

    /// Deletes a dead job. KEYS: dead. ARGV: prefix, id. Returns 1 when it was there.
    static let discard = RedisScript(
        name: "discard",
        source: """
            if redis.call('ZREM', KEYS[1], ARGV[2]) == 0 then return 0 end
            redis.call('DEL', ARGV[1] .. 'job:' .. ARGV[2])
            return 1
            """)
}
