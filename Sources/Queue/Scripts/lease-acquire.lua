-- Takes the lease when nobody holds it, or renews it when the holder does (LeaderLease).
-- KEYS: lease. ARGV: holder, ttl ms. Returns 1 when the holder has the lease.
local current = redis.call('GET', KEYS[1])
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if current then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
