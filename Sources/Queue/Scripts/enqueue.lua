-- KEYS: stream, scheduled, cron. ARGV: prefix, count, then per job:
-- id, kind, payload, maxAttempts, visibilityMs, delayMs, uniqueKey, uniqueTtlMs, cronName, fireMs, cronMode, owner,
-- reservation, given ('1': the producer chose the id, e.g. a transactional outbox's relay, so a second enqueue of it
-- while its record lives is a duplicate of itself), events (the event log's lifetime in ms for kinds with
-- `events: true`, else empty), startBy (ms from now within which it must start, else empty), trace (the producer's
-- trace context, else empty), lane (its fair lane, else empty), window (its shard's fair window), gated ('1': it holds
-- its place in the window until it takes its provider token), weight (its lane's turns in a row each round; empty
-- for a kind whose lanes are not weighted).
-- Returns per job: the id, `dup:<id of the holder>` for a taken unique key or a given id already enqueued, or `skip`
-- for a cron fire already done.
-- Includes only the clock, not the helpers: an API request enqueues one job per call, and defining the helpers was a
-- tenth of the script's time. Each job's record is written in one HSET (a call per field group cost ~2 µs each), and
-- the enqueue time of a job that goes straight to the stream is its entry id's (Redis's clock, as `TIME`), so `TIME`
-- runs only for a delayed job.
-- @include clock.lua
-- @include lanes.lua
local stream, scheduled, cron = KEYS[1], KEYS[2], KEYS[3]
local prefix, n = ARGV[1], tonumber(ARGV[2])
local now = nil
local out = {}
for i = 0, n - 1 do
  local b = 2 + i * 21
  local id, kind, payload, max, vis = ARGV[b+1], ARGV[b+2], ARGV[b+3], ARGV[b+4], ARGV[b+5]
  local delay, ukey, uttl = tonumber(ARGV[b+6]), ARGV[b+7], ARGV[b+8]
  local cronName, fire, cronMode, owner = ARGV[b+9], ARGV[b+10], ARGV[b+11], ARGV[b+12]
  local reservation, given, events, startBy, trace = ARGV[b+13], ARGV[b+14], ARGV[b+15], ARGV[b+16], ARGV[b+17]
  local lane, window, gated, weight = ARGV[b+18], ARGV[b+19], ARGV[b+20], tonumber(ARGV[b+21])
  local result = id
  if given == '1' and redis.call('EXISTS', prefix .. 'job:' .. id) == 1 then result = 'dup:' .. id end
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
    if reservation ~= '' then fields[#fields + 1] = 'resv'; fields[#fields + 1] = reservation end
    if cronName ~= '' then fields[#fields + 1] = 'fire'; fields[#fields + 1] = fire end
    if events ~= '' then fields[#fields + 1] = 'ev'; fields[#fields + 1] = events end
    if trace ~= '' then fields[#fields + 1] = 'tp'; fields[#fields + 1] = trace end
    if startBy ~= '' then
      now = now or nowMs()
      fields[#fields + 1] = 'sby'; fields[#fields + 1] = int(now + tonumber(startBy))
    end
    if delay > 0 then
      now = now or nowMs()
      fields[#fields + 1] = 'enq'; fields[#fields + 1] = int(now)
      fields[#fields + 1] = 'runAt'; fields[#fields + 1] = int(now + delay)
      redis.call('ZADD', scheduled, now + delay, id)
    elseif lane ~= '' then
      now = now or nowMs()
      fields[#fields + 1] = 'enq'; fields[#fields + 1] = int(now)
      fields[#fields + 1] = 'fair'; fields[#fields + 1] = lane
      if gated == '1' then fields[#fields + 1] = 'fg'; fields[#fields + 1] = '1' end
    else
      local entry = redis.call('XADD', stream, '*', 'id', id)
      fields[#fields + 1] = 'enq'; fields[#fields + 1] = string.match(entry, '^%d+')
    end
    redis.call('HSET', prefix .. 'job:' .. id, unpack(fields))
    if lane ~= '' and delay <= 0 then joinLane(prefix, stream, id, lane, window, weight, now) end
    if events ~= '' then
      -- Its event log starts with its first state; followers already waiting are woken.
      local log = prefix .. 'job:' .. id .. ':ev'
      redis.call('XADD', log, 'MAXLEN', '~', '1000', '*', 'type', 'state', 'status', 'queued', 'attempt', '0')
      redis.call('PEXPIRE', log, events)
      redis.call('SPUBLISH', prefix .. 'events', id .. ' queued')
    end
  end
  table.insert(out, result)
end
return out
