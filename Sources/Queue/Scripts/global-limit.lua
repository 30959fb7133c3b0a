-- A process's permits of a queue's limit across processes (GlobalLimits): records what the holder holds now, drops the
-- holders whose lease ran out (processes that died), then grants up to `wanted` more within the limit.
-- KEYS: held (hash: holder -> permits), leases (sorted set: holder -> lease end, ms).
-- ARGV: holder, permits it holds now, permits wanted, limit, lease ms. Returns {granted, permits held by all}.
-- @include clock.lua
local now = nowMs()
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
if #dead > 0 then
  redis.call('HDEL', KEYS[1], unpack(dead))
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
end
local mine = tonumber(ARGV[2])
local others = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i] ~= ARGV[1] then others = others + tonumber(all[i + 1]) end
end
local granted = math.max(0, math.min(tonumber(ARGV[3]), tonumber(ARGV[4]) - others - mine))
mine = mine + granted
if mine > 0 then
  redis.call('HSET', KEYS[1], ARGV[1], int(mine))
  redis.call('ZADD', KEYS[2], int(now + tonumber(ARGV[5])), ARGV[1])
else
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return {granted, others + mine}
