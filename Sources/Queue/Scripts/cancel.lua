-- Cancels a job (`carbscan jobs cancel`). KEYS: scheduled, retry, stats, stream.
-- ARGV: prefix, group, id, retentionMs, then for a job that is only its stream entry (no record yet): the entry id,
-- kind, payload, max, vis (else empty).
-- Replies where the job was: `queued`, `scheduled` or `retrying` (cancelled now); `running <worker>` (marked: the
-- worker is told to cancel its task, and no later delivery runs it); `finished <status>`; nil when there is no job.
-- A cancelled job still on its stream stays there until a worker reads it: the start acknowledges it unrun.
-- @include helpers.lua
local scheduled, retryKey, statsKey, stream = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prefix, group, id, retention = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local key = prefix .. 'job:' .. id
local f = redis.call('HMGET', key, 'kind', 'status', 'worker')
local now = nowMs()
if not f[1] then
  local entry = ARGV[5]
  if entry == '' then return nil end
  -- Only its entry carries it: it still waits if the group has not read that far (else it ran, and its record
  -- is gone already).
  local delivered = '0-0'
  local groups = redis.pcall('XINFO', 'GROUPS', stream)
  if not groups.err then
    for _, g in ipairs(groups) do
      local fields = fieldsOf(g)
      if fields['name'] == group then delivered = fields['last-delivered-id'] end
    end
  end
  local em, es = string.match(entry, '^(%d+)-(%d+)$')
  local dm, ds = string.match(delivered, '^(%d+)-(%d+)$')
  em, es, dm, ds = tonumber(em), tonumber(es), tonumber(dm), tonumber(ds)
  if not (em > dm or (em == dm and es > ds)) then return nil end
  redis.call('HSET', key, 'kind', ARGV[6], 'payload', ARGV[7], 'max', ARGV[8], 'vis', ARGV[9], 'enq', int(em))
  redis.call('SADD', prefix .. 'cancelled', id)
  cancelJob(prefix, statsKey, key, id, now, retention)
  return 'queued'
end
local status = f[2] or 'queued'
if status == 'succeeded' or status == 'failed' or status == 'cancelled' or status == 'expired' then
  return 'finished ' .. status
end
if status == 'running' then
  redis.call('HSET', key, 'cncl', ARGV[4])
  -- Noted apart too: finish.lua reads a record whose start wrote it whole only when its id is here.
  redis.call('SADD', prefix .. 'cancelling', id)
  return 'running ' .. (f[3] or '')
end
local where = status
if redis.call('ZREM', scheduled, id) == 1 then
  where = 'scheduled'
elseif redis.call('ZREM', retryKey, id) == 1 then
  where = 'retrying'
end
cancelJob(prefix, statsKey, key, id, now, retention)
return where
