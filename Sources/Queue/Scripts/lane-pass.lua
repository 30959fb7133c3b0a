-- A fair job of a rate-limited kind took its provider token: it leaves the window, and the next lane's job moves up.
-- KEYS: stream. ARGV: prefix (the queue's base), id.
-- @include clock.lua
-- @include lanes.lua
leaveLanes(ARGV[1], KEYS[1], {ARGV[2]}, nowMs())
return 1
