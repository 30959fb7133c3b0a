-- Moves due delayed jobs and retries onto the stream. KEYS: stream, scheduled, retry. ARGV: limit.
-- Returns {moved, ms until the next due job or -1}.
-- @include helpers.lua
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
