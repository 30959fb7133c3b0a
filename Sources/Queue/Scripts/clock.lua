-- Redis's clock, and whole numbers as text: the first lines of every script that needs the time.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A whole number as Redis should store it. Lua numbers are doubles, and redis.call turns one into text
-- through printf's floating-point path ("%.14g"), which was 4% of Redis's time in the process benchmark:
-- the per-job numbers go through the integer path instead.
local function int(n) return string.format('%d', n) end
