-- Hands back jobs whose lease ran out (their worker died or hung): the entry idle longer than the job's
-- visibility timeout. A live worker's heartbeat (`XCLAIM … JUSTID`) resets the idle time, so it keeps its jobs.
-- Consumers that hold nothing and were idle longer than `consumerIdleMs` are deleted (their workers are gone: a
-- live one reads every few seconds, and a deleted consumer is made again by its next read).
-- KEYS: stream. ARGV: prefix, group, minIdleMs, limit, consumerIdleMs. Returns the ids handed back.
-- @include helpers.lua
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
