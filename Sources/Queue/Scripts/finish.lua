-- Records a batch of outcomes in one round-trip. KEYS: stream, retry, dead, stats.
-- ARGV: prefix, group, deadCap, deadMaxAgeMs, then per outcome: id, entry, outcome, text, ms, plain ('p': its record
-- was written whole by its start, see `started`; else empty).
-- outcome `ok` (text = result JSON, ms = retention), `retry` (text = error, ms = delay),
-- `dead` (text = error, ms = retention), `requeue` (handed back on shutdown: not an attempt), `wait` (a dependency
-- was unreachable: text = error, ms = the first wait, doubled per outage in a row up to 30 s; not an attempt),
-- `cancel` (an operator cancelled it while it ran: ms = retention).
-- It runs even when Redis is full (`maxmemory` with `noeviction`): Redis refuses a script for memory only at
-- its first write, and this one's first write is `XACK`, which Redis never refuses, so the rest follows. Keep
-- it first: recording mostly frees memory (acknowledged entries trimmed, expired records dropped), and a
-- worker that could not record would leave its jobs leased until they ran again elsewhere. Enqueues, which only
-- add, are refused meanwhile (OutageTests).
-- @include helpers.lua
local stream, retryKey, deadKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prefix, group, cap, maxAge = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local now = nowMs()
local nowText = int(now)
local succeeded, retried = 0, 0
local leaving = {}
-- Completion events go out only while someone listens (the API's job waiters): a PUBLISH per job to an
-- empty channel still cost a call. Sharded pub/sub (SPUBLISH, Redis 7): on a cluster the channel lives on the
-- queue's node, and its subscribers are counted there, where a classic PUBLISH would go to every node. A waiter subscribes before it reads the job's status, so it either
-- counts here or sees the finished record.
local listening = redis.call('PUBSUB', 'SHARDNUMSUB', prefix .. 'events')[2] > 0
-- Every delivered entry is acknowledged, in calls of up to 500 entries rather than one per job; then the
-- finished head of the stream goes.
local entries, acked, count = {}, 0, (#ARGV - 4) / 6
for i = 6, #ARGV, 6 do
  entries[#entries + 1] = ARGV[i]
  if #entries == 500 then
    acked = acked + redis.call('XACK', stream, group, unpack(entries))
    entries = {}
  end
end
if #entries > 0 then acked = acked + redis.call('XACK', stream, group, unpack(entries)) end
trim(stream, group)
-- A plain record (its start wrote it whole: a first delivery of a job enqueued without one) is known without reading
-- it, when every entry was still pending: no lease ran out, as a reclaim acknowledges the entry it hands back, so each
-- delivery still holds its job; and its id is not among the running jobs an operator cancelled (cancel.lua notes them
-- in `cancelling`). Reading it was a call per job: the HMGET alone took 1.75 µs of Redis's time per no-op job in the
-- process benchmark, and the call around it about as much again.
local held = acked == count
local cancelling = {}
if held and redis.call('SCARD', prefix .. 'cancelling') > 0 then
  for i = 5, #ARGV, 6 * 500 do
    local ids = {}
    for j = i, math.min(#ARGV, i + 6 * 499), 6 do ids[#ids + 1] = ARGV[j] end
    for n, member in ipairs(redis.call('SMISMEMBER', prefix .. 'cancelling', unpack(ids))) do
      if member == 1 then cancelling[ids[n]] = true end
    end
  end
end
for i = 5, #ARGV, 6 do
  local id, entry, outcome, text, msText = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3], ARGV[i+4]
  local ms = tonumber(msText)
  local key = prefix .. 'job:' .. id
  local f
  if held and ARGV[i+5] == 'p' and not cancelling[id] then
    -- status, attempts, entry; no cancellation, reservation, event log or lane.
    f = {'running', '1', entry}
  else
    f = redis.call('HMGET', key, 'status', 'attempts', 'entry', 'cncl', 'resv', 'ev', 'fair')
  end
  -- Only the delivery that holds the job may change it: a late answer from a worker whose lease
  -- expired (the job was handed to another) must not overwrite the newer state.
  if f[1] == 'running' and f[3] == entry then
    -- A fair job still in the window (one that took no token) leaves it, unless handed back to run again.
    if f[7] and outcome ~= 'requeue' then leaving[#leaving + 1] = id end
    -- Cancelled by an operator while it ran (`cncl` holds the retention): whatever ends it but success
    -- ends it as cancelled, so no retry or hand-back runs it again.
    if f[4] and outcome ~= 'ok' then
      outcome, ms = 'cancel', tonumber(f[4])
    end
    if outcome == 'ok' then
      succeeded = succeeded + 1
      if f[4] then redis.call('SREM', prefix .. 'cancelling', id) end
      noteSettlement(prefix, id, 'charge', f[5])
      logState(prefix, id, f[6], 'succeeded', f[2])
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
      if listening then redis.call('SPUBLISH', prefix .. 'events', id .. ' succeeded') end
    elseif outcome == 'retry' then
      retried = retried + 1
      redis.call('HSET', key, 'status', 'retrying', 'err', text, 'runAt', now + ms)
      pushHistory(key, tonumber(f[2]), now, text)
      logState(prefix, id, f[6], 'retrying', f[2])
      redis.call('ZADD', retryKey, now + ms, id)
      if listening then redis.call('SPUBLISH', prefix .. 'events', id .. ' retrying') end
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
      logState(prefix, id, f[6], 'retrying', f[2])
      redis.call('ZADD', retryKey, now + delay, id)
      if listening then redis.call('SPUBLISH', prefix .. 'events', id .. ' retrying') end
    elseif outcome == 'cancel' then
      cancelJob(prefix, statsKey, key, id, now, ms)
    elseif outcome == 'requeue' then
      local status = 'queued'
      if tonumber(f[2]) > 1 then status = 'retrying' end
      redis.call('HINCRBY', key, 'attempts', -1)
      redis.call('HSET', key, 'status', status)
      redis.call('XADD', stream, '*', 'id', id)
    end
  end
end
leaveLanes(prefix, stream, leaving, now)
if succeeded > 0 then redis.call('HINCRBY', statsKey, 'succeeded', succeeded) end
if retried > 0 then redis.call('HINCRBY', statsKey, 'retried', retried) end
return succeeded
