-- Gives the lease up, only if the holder still has it (LeaderLease).
-- KEYS: lease. ARGV: holder.
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
