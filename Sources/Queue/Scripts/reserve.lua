-- Non-blocking fetch and start in one round-trip. KEYS: stream, dead, stats.
-- ARGV: prefix, group, consumer, count, deadRetentionMs, deadCap, deadMaxAgeMs, idle ('1': nothing in flight).
-- Returns 10 fields per job: id, entry, kind, payload, attempt, maxAttempts, fireMs, enqueuedMs, isolated, trace context.
-- @include helpers.lua
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[2], ARGV[3], 'COUNT', ARGV[4], 'STREAMS', KEYS[1], '>')
if not reply then return {} end
local entries = {}
for _, e in ipairs(reply[1][2]) do table.insert(entries, {e[1], e[2][2], carried(e[2])}) end
return start(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], entries,
  tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8])
