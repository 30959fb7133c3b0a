-- The helpers the delivery, finish and maintenance scripts share.
-- @include clock.lua
-- @include lanes.lua
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
-- Notes what a job that holds a reservation (its record's `resv`) owes as it ends, `charge` (it succeeded) or
-- `release` (dead or cancelled), on the queue's settlements stream, in the same script that records the end: the
-- upkeep leader hands them to the reservation ledger (JobQueue.settlements). Capped far above any backlog a live
-- ledger leaves (it drains every quarter second).
local function noteSettlement(prefix, id, how, reservation)
  if reservation then
    redis.call('XADD', prefix .. 'settle', 'MAXLEN', '~', '1000000', '*', 'id', id, 'how', how, 'resv', reservation)
  end
end
-- Appends a state change to the job's event log, for kinds that keep one (`events`: the record's `ev`, the log's
-- lifetime in ms); the followers are woken by the completion event the caller publishes, or by `wake`.
local function logState(prefix, id, events, status, attempt, wake)
  if not events then return end
  local log = prefix .. 'job:' .. id .. ':ev'
  redis.call('XADD', log, 'MAXLEN', '~', '1000', '*', 'type', 'state', 'status', status, 'attempt', attempt or '0')
  redis.call('PEXPIRE', log, events)
  if wake then redis.call('SPUBLISH', prefix .. 'events', id .. ' ' .. status) end
end
-- Moves a job to the dead set with its last error. The dead set is capped by count and age:
-- the oldest entries go first, with their records, so it never grows without bound.
local function bury(prefix, deadKey, statsKey, id, now, message, retention, cap, maxAge)
  local key = prefix .. 'job:' .. id
  local f = redis.call('HMGET', key, 'attempts', 'resv', 'ev')
  local attempts = tonumber(f[1] or '0')
  redis.call('HSET', key, 'status', 'failed', 'fin', now, 'err', message)
  noteSettlement(prefix, id, 'release', f[2])
  logState(prefix, id, f[3], 'failed', f[1])
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
  redis.call('SPUBLISH', prefix .. 'events', id .. ' failed')
end
-- Ends a job as cancelled by an operator (`carbscan jobs cancel`): it does not run (again). Its unique key is
-- released if it still holds it, and its record kept `retention` ms. The stats count it apart from failures.
local function cancelJob(prefix, statsKey, key, id, now, retention)
  redis.call('SREM', prefix .. 'cancelling', id)
  local f = redis.call('HMGET', key, 'unique', 'resv', 'ev', 'attempts')
  local ukey = f[1]
  if ukey and redis.call('GET', prefix .. 'unique:' .. ukey) == id then redis.call('DEL', prefix .. 'unique:' .. ukey) end
  redis.call('HSET', key, 'status', 'cancelled', 'fin', int(now), 'err', 'cancelled by an operator')
  noteSettlement(prefix, id, 'release', f[2])
  logState(prefix, id, f[3], 'cancelled', f[4])
  redis.call('HDEL', key, 'entry', 'runAt', 'cncl')
  if retention > 0 then redis.call('PEXPIRE', key, retention) end
  redis.call('HINCRBY', statsKey, 'cancelled', 1)
  if redis.call('PUBSUB', 'SHARDNUMSUB', prefix .. 'events')[2] > 0 then
    redis.call('SPUBLISH', prefix .. 'events', id .. ' cancelled')
  end
end
-- Ends a job that was not started by its `start_by` time (its record's `sby`): it does not run. What it reserved is
-- given back, its record is kept `retention` ms, and the stats count it apart from failures.
local function expire(prefix, statsKey, key, id, now, retention, reservation, events, attempts)
  redis.call('HSET', key, 'status', 'expired', 'fin', int(now), 'err', 'not started within its start_by time')
  redis.call('HDEL', key, 'entry', 'runAt')
  noteSettlement(prefix, id, 'release', reservation)
  logState(prefix, id, events, 'expired', attempts)
  if retention > 0 then redis.call('PEXPIRE', key, retention) end
  redis.call('HINCRBY', statsKey, 'expired', 1)
  redis.call('SPUBLISH', prefix .. 'events', id .. ' expired')
end
-- The job an entry carries ({kind, payload, max, vis}), or nil when it only names one (`id`).
local function carried(flat)
  if #flat <= 2 then return nil end
  -- In the order the enqueue writes them, read in place: no table of names per job.
  if flat[3] == 'kind' and flat[5] == 'payload' and flat[7] == 'max' and flat[9] == 'vis' then
    return {flat[4], flat[6], flat[8], flat[10]}
  end
  local f = fieldsOf(flat)
  return {f['kind'], f['payload'], f['max'], f['vis']}
end
-- The 10 fields the worker reads per started job (the ninth: '1' when the job runs isolated, see start; 'e' when it
-- expired instead of starting: the worker only reports its end; 'p' when its record was written whole by this start,
-- so it holds nothing but the delivery's fields, see finish.lua; the tenth: the producer's trace context, `tp`).
local function started(out, id, entry, kind, payload, attempts, max, fire, enq, mark, trace)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = id, entry, kind, payload
  out[n + 5], out[n + 6], out[n + 7], out[n + 8] = attempts, max, fire, enq
  out[n + 9], out[n + 10] = mark or '', trace or ''
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
  -- Fair jobs that leave the window here: those that end without running, and those that start and wait for no token.
  local leaving = {}
  -- A carried job cancelled while it waited: its id is in the queue's set `cancelled` (read once per call, and
  -- per job only while the set holds any).
  local anyCancelled = nil
  local function cancelledCarried(id)
    if anyCancelled == nil then anyCancelled = redis.call('SCARD', prefix .. 'cancelled') > 0 end
    return anyCancelled and redis.call('SREM', prefix .. 'cancelled', id) == 1
  end
  for _, e in ipairs(entries) do
    local entry, id, job = e[1], e[2], e[3]
    local key = prefix .. 'job:' .. id
    if alone then
      handBack(stream, group, entry, id, job)
    elseif job and cancelledCarried(id) then
      redis.call('XACK', stream, group, entry)
    elseif job then
      local enq = string.match(entry, '^%d+')
      redis.call('HSET', key, 'kind', job[1], 'payload', job[2], 'max', job[3], 'vis', job[4], 'enq', enq,
        'status', 'running', 'start', nowText, 'worker', consumer, 'entry', entry, 'attempts', '1')
      started(out, id, entry, job[1], job[2], 1, tonumber(job[3]), '', enq, 'p')
    else
      local f = redis.call('HMGET', key, 'kind', 'payload', 'max', 'status', 'fire', 'enq', 'attempts', 'lost', 'cncl',
        'sby', 'ev', 'resv', 'tp', 'fair', 'fg')
      -- A fair job that ends here leaves the window; so does one that starts with no token to wait for.
      local fair = f[14]
      if fair and not f[15] then leaving[#leaving + 1] = id end
      if not f[1] or f[4] == 'succeeded' or f[4] == 'failed' or f[4] == 'cancelled' or f[4] == 'expired' then
        redis.call('XACK', stream, group, entry)
        if fair and f[15] then leaving[#leaving + 1] = id end
      elseif f[10] and now > tonumber(f[10]) and not f[9] then
        -- Waited past its start_by time: whoever wanted it has left.
        redis.call('XACK', stream, group, entry)
        if fair and f[15] then leaving[#leaving + 1] = id end
        expire(prefix, statsKey, key, id, now, deadRetention, f[12], f[11], f[7])
        started(out, id, entry, f[1], f[2], tonumber(f[7] or '0'), tonumber(f[3]), f[5] or '', f[6] or '', 'e', f[13])
      elseif f[9] then
        -- Cancelled while it ran (its worker died or handed it back since): it does not run again.
        redis.call('XACK', stream, group, entry)
        if fair and f[15] then leaving[#leaving + 1] = id end
        cancelJob(prefix, statsKey, key, id, now, tonumber(f[9]))
      else
        -- Counted here and written with the status below: one call less per job than HINCRBY.
        local attempts = tonumber(f[7] or '0') + 1
        local max = tonumber(f[3])
        local lost = tonumber(f[8] or '0')
        if attempts > max then
          redis.call('HSET', key, 'attempts', attempts)
          redis.call('XACK', stream, group, entry)
          if fair and f[15] then leaving[#leaving + 1] = id end
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
          logState(prefix, id, f[11], 'running', int(attempts), true)
          started(out, id, entry, f[1], f[2], attempts, max, f[5] or '', f[6] or '', isolated, f[13])
        end
      end
    end
  end
  leaveLanes(prefix, stream, leaving, now)
  return out
end
