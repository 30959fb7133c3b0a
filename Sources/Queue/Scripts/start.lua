-- Starts entries that a blocking `XREADGROUP` delivered. KEYS: stream, dead, stats.
-- ARGV: prefix, group, consumer, deadRetentionMs, deadCap, deadMaxAgeMs, idle, then per entry: entry, id, kind,
-- payload, max, vis (kind empty for an entry that only names its job).
-- @include helpers.lua
local entries = {}
for i = 8, #ARGV, 6 do
  local job = nil
  if ARGV[i+2] ~= '' then job = {ARGV[i+2], ARGV[i+3], ARGV[i+4], ARGV[i+5]} end
  table.insert(entries, {ARGV[i], ARGV[i+1], job})
end
return start(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], entries,
  tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7])
