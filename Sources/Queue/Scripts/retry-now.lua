-- Runs a waiting job now: a dead one (with a fresh set of attempts), a retry or a delayed job.
-- KEYS: stream, scheduled, retry, dead. ARGV: prefix, id. Returns where it was, or nil.
-- @include helpers.lua
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
